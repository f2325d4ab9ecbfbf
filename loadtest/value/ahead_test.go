package value

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ahead"
	"github.com/hintstream/hintstream/loadtest/workload"
)

// unannounced drops every wake-up: the frontend tells hintstream nothing
// ahead of a turn.
func unannounced(w *workload.Workload) {
	evs := w.Events[:0]
	for _, ev := range w.Events {
		if ev.Kind != workload.KindWakeup {
			evs = append(evs, ev)
		}
	}
	w.Events = evs
	for i := range w.Requests {
		w.Requests[i].HasWakeup = false
	}
}

// Sessions whose turns nothing announces, most after a tool call of a
// steady time: the in-process engine with header-free prefetches (the
// whatif policy) prefetches some turns before they come, the harness
// finds blocks it loaded used on the turn's device, and hintstream's own
// accounting keeps the waste within the budget (--max-prefetch-waste 1
// plus the warm-up allowance).
func TestHeaderFreePrefetchInProcess(t *testing.T) {
	w, err := workload.Generate(workload.SyntheticConfig{Seed: 3, Sessions: 40, MinTurns: 6, MaxTurns: 10,
		ToolCallProb: 0.9, ToolTime: 20 * time.Second, ToolTimeSigma: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	unannounced(w)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Small devices: a context does not stay on its worker between turns.
	cfg := Config{Workload: w, TransferTime: true, DeviceBlocks: 48, L3Blocks: 4096}
	pols := Policies()
	pol := pols[len(pols)-1]
	if !pol.Ahead || !pol.Affinity {
		t.Fatalf("last policy %+v: want the header-free prefetch one", pol)
	}
	sim, err := Simulate(ctx, cfg, []Policy{{Name: "today", Affinity: true}, pol})
	if err != nil {
		t.Fatal(err)
	}
	base, got := sim.Policies[0], sim.Policies[1]
	a := got.Ahead
	t.Logf("today %.0f, with header-free prefetch %.0f; %+v (harness waste %.2f × used)", base.Saving, got.Saving, a, a.WasteRatio())
	if a.Prefetches == 0 || a.UsedBlocks == 0 || a.UsedBytes == 0 {
		t.Fatalf("no header-free prefetch used: %+v; counters %v", a, got.Counters)
	}
	allowance := float64(ahead.DefaultWarmupTokens) * float64(DefaultKVBytesPerToken)
	if a.UsedBytes == 0 {
		allowance = max(allowance, float64(a.WastedBytes)) // one prefetch of any size
	}
	if float64(a.WastedBytes) > 1.0*float64(a.UsedBytes)+allowance {
		t.Fatalf("hintstream wasted %d bytes, used %d: over the budget", a.WastedBytes, a.UsedBytes)
	}
	if got.Saving <= base.Saving {
		t.Fatalf("header-free prefetch saved %.0f, without %.0f", got.Saving, base.Saving)
	}
}
