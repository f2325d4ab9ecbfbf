package simulate

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/race"
	"github.com/hintstream/hintstream/whatif/workload"
)

// Simulate with every policy and every peer at once: each run's
// mechanism breakdown, folded request by request, has rows that add up
// to its Total, and Total is the bound's saving minus the run's, exactly
// (to float rounding); the hint-reachable bound is Run's, computed
// in memory.
func TestSimulateMechanismAddsUpForEveryRow(t *testing.T) {
	sessions := 60
	if race.Enabled { // the full case runs without -race (make test's sim pass)
		sessions = 15
	}
	w, err := workload.Generate(workload.SyntheticConfig{Seed: 5, Sessions: sessions, MinTurns: 3, MaxTurns: 8,
		ToolCallProb: 0.7, ToolTime: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkMechanismAddsUp(t, Config{Workload: w, DeviceBlocks: 32, L3Blocks: 96, TransferTime: true})
}

// The same on the long-context coding-agent profile (3 conversations,
// 2,048-token blocks so that a 110K prompt is 54 blocks; devices of 128,
// an L3 of 512), whose next turns are signalled at tools' ends and
// predicted ends, not by the assumed rule.
func TestSimulateMechanismAddsUpOnTheAgentProfile(t *testing.T) {
	w, err := workload.GenerateAgent(workload.AgentConfig{Seed: 2, Conversations: 3, BlockSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats().Signals; st.Assumed != 0 || st.ToolEnd == 0 || st.FactTurns != w.Len() {
		t.Fatalf("agent profile signals %+v", st)
	}
	checkMechanismAddsUp(t, Config{Workload: w, DeviceBlocks: 128, L3Blocks: 512, TransferTime: true})
}

func checkMechanismAddsUp(t *testing.T, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pols := append(append(Policies(), Peers()...), OptInPolicies()...)
	sim, err := Simulate(ctx, cfg, pols)
	if err != nil {
		t.Fatal(err)
	}
	runs := append([]ModeResult{sim.Oracle}, sim.Policies...)
	for _, r := range runs {
		m := r.Mechanism
		if m == nil {
			t.Fatalf("%s: no mechanism breakdown", r.Mode)
		}
		rows := m.Retention + m.Placement + m.Timing + m.WrongWorker + m.NoSignal + m.Warmup
		want := sim.Bound.Saving - r.Saving
		tol := 1e-6 * max(1, math.Abs(sim.NoHints.Cost))
		if math.Abs(rows-m.Total) > tol || math.Abs(m.Total-want) > tol {
			t.Fatalf("%s: rows %v, Total %v, bound saving − run saving %v", r.Mode, rows, m.Total, want)
		}
	}
	if sim.NoHints.Mechanism != nil {
		t.Fatal("the no-hints run has a breakdown: it is the baseline")
	}
	// Something to break down: the runs differ from the bound.
	if sim.Policies[0].Mechanism.Total <= 0 {
		t.Fatalf("today's misses nothing against the bound: %+v", sim.Policies[0].Mechanism)
	}
	pr, err := newPrompts(func() Config { c, _ := cfg.withDefaults(); return c }())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cfg.withDefaults()
	want, err := reachableMode(c, pr)
	if err != nil {
		t.Fatal(err)
	}
	if sim.Reachable.Cost != want.Cost || sim.Reachable.Mode != ModeReachable || sim.Reachable.Saving != sim.NoHints.Cost-want.Cost {
		t.Fatalf("Simulate's hint-reachable bound %+v, Run's %v", sim.Reachable, want.Cost)
	}
}

// The retain row applies one hintstream.retain per tool call, decoded as
// the adapter decodes it, at the worker that answered; the row without
// --retain-on-worker applies none, and neither has a hint it could not
// apply.
func TestSimulateRetainOnWorkerKeepsEachToolCall(t *testing.T) {
	w, err := workload.GenerateAgent(workload.AgentConfig{Seed: 2, Conversations: 3, BlockSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim, err := Simulate(ctx, Config{Workload: w, DeviceBlocks: 128, L3Blocks: 512, TransferTime: true},
		append(Policies()[5:6], OptInPolicies()...))
	if err != nil {
		t.Fatal(err)
	}
	if w.Stats().ToolCalls == 0 {
		t.Fatal("no tool call to retain")
	}
	plain, retain := sim.Policies[0], sim.Policies[1]
	if plain.Mode != "today's + affinity" || retain.Mode != RetainOnWorkerRow {
		t.Fatalf("rows %q, %q", plain.Mode, retain.Mode)
	}
	if plain.Retains != 0 || retain.Retains != w.Stats().ToolCalls {
		t.Fatalf("retains %d and %d, want 0 and one per tool call (%d)", plain.Retains, retain.Retains, w.Stats().ToolCalls)
	}
	if plain.BadHints != 0 || retain.BadHints != 0 {
		t.Fatalf("hints not applied: %d, %d", plain.BadHints, retain.BadHints)
	}
}

// The pin budget row bounds the pins by the L3's capacity: on an L3 of
// about one context it releases pins (hintstream_pins_budget_released),
// while the same row without the budget releases none.
func TestSimulatePinBudgetReleasesUnderPressure(t *testing.T) {
	w, err := workload.GenerateAgent(workload.AgentConfig{Seed: 2, Conversations: 6, BlockSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim, err := Simulate(ctx, Config{Workload: w, DeviceBlocks: 128, L3Blocks: 64, TransferTime: true}, Policies()[5:7])
	if err != nil {
		t.Fatal(err)
	}
	plain, budget := sim.Policies[0], sim.Policies[1]
	if plain.Mode != "today's + affinity" || budget.Mode != "today's + affinity + pin budget" {
		t.Fatalf("rows %q, %q", plain.Mode, budget.Mode)
	}
	const released = "hintstream_pins_budget_released_total"
	if plain.Counters[released] != 0 || budget.Counters[released] == 0 {
		t.Fatalf("pins released over budget: %d without the budget, %d with it; want 0 and some",
			plain.Counters[released], budget.Counters[released])
	}
	if plain.Pins != budget.Pins {
		t.Fatalf("pins %d and %d: the budget releases pins, it makes the same ones", plain.Pins, budget.Pins)
	}
}
