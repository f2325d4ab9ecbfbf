package value

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/whatif/workload"
)

// tracePath finds the Mooncake trace beside the shared vectors; a test
// that needs it fails when it is missing.
func tracePath(tb testing.TB) string {
	tb.Helper()
	p := testvectors.TracePath(tb)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("Mooncake trace: %v", err)
	}
	return p
}

// The slice of the trace with the most conversations inside it
// (requests 3775..3974: 18 next turns, 4 of them forks, within 32 s of
// their previous turn), on a cluster small enough to be under pressure.
func TestRunOnATraceSlice(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 3775, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Workload: w, DeviceBlocks: 512, L3Blocks: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Markdown())
	stats := w.Stats()
	if l := w.Links(); stats.NextTurns != 18 || l.Forks != 4 {
		t.Fatalf("slice has %d next turns (%d forks), want 18 (4)", stats.NextTurns, l.Forks)
	}
	for _, m := range []ModeResult{res.NoHints, res.Hintstream, res.Oracle, res.Bound} {
		if m.Requests != 200 || m.DeviceHitTokens+m.L3HitTokens+m.RecomputedTokens != m.PromptTokens {
			t.Fatalf("%s: %d requests, tokens %d+%d+%d of %d", m.Mode, m.Requests,
				m.DeviceHitTokens, m.L3HitTokens, m.RecomputedTokens, m.PromptTokens)
		}
	}
	if res.NoHints.RecomputedTokens*4 < res.NoHints.PromptTokens {
		t.Fatalf("no cache pressure: only %d of %d tokens recomputed", res.NoHints.RecomputedTokens, res.NoHints.PromptTokens)
	}
	hs, or := res.Hintstream, res.Oracle
	if hs.Saving <= 0 {
		t.Fatalf("hintstream saves %v prefill tokens over no hints", hs.Saving)
	}
	// Run itself fails on a run that beats the bound; the bound must
	// also be more than the trivial one (saving everything reusable).
	if bd := res.Bound; bd.Saving < max(hs.Saving, or.Saving) || bd.Cost <= 0 {
		t.Fatalf("bound saves %v (cost %v); hintstream %v, next-turn oracle %v", bd.Saving, bd.Cost, hs.Saving, or.Saving)
	}
	// Every wake-up became a prefetch, sent where the router model,
	// looking at the caches themselves, would have sent it: the index
	// hintstream built from the KV events agrees with the caches.
	if hs.Prefetches != stats.Wakeups || hs.SelectionAgreement != hs.Prefetches {
		t.Fatalf("%d wake-ups, %d prefetches, %d where the router model would go", stats.Wakeups, hs.Prefetches, hs.SelectionAgreement)
	}
	if hs.Pins != stats.ToolCalls || hs.BadHints+hs.DuplicateHints+hs.ExpiredPrefetches != 0 {
		t.Fatalf("pins %d of %d tool calls; bad %d duplicate %d expired %d", hs.Pins, stats.ToolCalls,
			hs.BadHints, hs.DuplicateHints, hs.ExpiredPrefetches)
	}
	if res.OfBound <= 0 || res.OfBound > 1 || !strings.Contains(res.Markdown(), "of the clairvoyant bound's saved prefill") {
		t.Fatalf("share of the bound %v", res.OfBound)
	}
}

func TestConfigIsChecked(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no workload: %v", err)
	}
	w, err := workload.Generate(workload.SyntheticConfig{Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Config{Workload: w, Alpha: 2}); !errors.Is(err, ErrConfig) {
		t.Fatalf("alpha 2: %v", err)
	}
}

// BenchmarkValue runs the whole Mooncake trace (or its first
// HINTSTREAM_VALUE_REQUESTS requests) through the three runs and reports
// the share of the clairvoyant bound's (and the next-turn oracle's) saved
// prefill that hintstream gets.
// HINTSTREAM_VALUE_TRACE names another Mooncake-format trace;
// HINTSTREAM_VALUE_ANNOUNCE=1 announces tool times in the request header;
// HINTSTREAM_VALUE_TRANSFER=1 gives L3 → device loads their transfer time;
// HINTSTREAM_VALUE_AFFINITY=1 routes each turn to its prefetch's worker;
// HINTSTREAM_VALUE_SYNTHETIC=1 plays the synthetic sessions (seed 1,
// as the load test) instead; HINTSTREAM_VALUE_WORKLOAD=agent the
// long-context coding-agent profile (seed 1, 32 conversations: slow);
// HINTSTREAM_VALUE_OUT names a file for the Markdown report;
// HINTSTREAM_VALUE_WAKE_FIRST=1 announces first turns too (a wake-up 1 s
// before each).
//
//	go test -run '^$' -bench Value -benchtime 1x -timeout 20m ./loadtest/value/
func BenchmarkValue(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("HINTSTREAM_VALUE_REQUESTS"))
	path := os.Getenv("HINTSTREAM_VALUE_TRACE")
	if path == "" {
		path = tracePath(b)
	}
	w, err := workload.LoadTrace(path, workload.TraceOptions{Limit: n})
	if os.Getenv("HINTSTREAM_VALUE_SYNTHETIC") == "1" {
		w, err = workload.Generate(workload.SyntheticConfig{Seed: 1})
	}
	if os.Getenv("HINTSTREAM_VALUE_WORKLOAD") == "agent" {
		w, err = workload.GenerateAgent(workload.AgentConfig{Seed: 1})
	}
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("HINTSTREAM_VALUE_WAKE_FIRST") == "1" {
		w.WakeFirstTurns(time.Second)
	}
	cfg := Config{Workload: w, AnnounceToolTime: os.Getenv("HINTSTREAM_VALUE_ANNOUNCE") == "1",
		TransferTime: os.Getenv("HINTSTREAM_VALUE_TRANSFER") == "1", Affinity: os.Getenv("HINTSTREAM_VALUE_AFFINITY") == "1"}
	var res Result
	for b.Loop() {
		if res, err = Run(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100*res.OfBound, "of-bound-%")
	b.ReportMetric(100*res.Recovered, "of-next-turn-oracle-%")
	b.ReportMetric(res.Bound.Saving, "bound-saved-tokens")
	b.Logf("wall time %v (hintstream run %v)", res.NoHints.Elapsed+res.Oracle.Elapsed+res.Hintstream.Elapsed, res.Hintstream.Elapsed)
	b.ReportMetric(res.Hintstream.Saving, "hintstream-saved-tokens")
	b.ReportMetric(res.Oracle.Saving, "oracle-saved-tokens")
	b.ReportMetric(100*res.Hintstream.PrefetchAccuracy, "prefetch-accuracy-%")
	b.ReportMetric(float64(res.Hintstream.L3.PinsLapsed), "hintstream-pins-lapsed")
	b.Logf("hintstream: %d of %d pins (and %d renewals) lapsed before the next turn; %d used the default tool time, %d a provisional one; learned tool time at the end %d ms",
		res.Hintstream.L3.PinsLapsed, res.Hintstream.Pins, res.Hintstream.Renewals, res.Hintstream.Counters["hintstream_pins_expected_from_total|default"],
		res.Hintstream.Counters["hintstream_pins_expected_from_total|provisional"],
		res.Hintstream.Counters["hintstream_tooltime_expected_ms|"+workload.ToolName])
	b.Log("\n" + res.Markdown())
	if out := os.Getenv("HINTSTREAM_VALUE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(res.Markdown()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// With affinity on, every turn with a prefetch goes where the prefetch
// went (read back from hintstream's real affinity bucket), so every
// prefetch is accurate; and the lost-savings rows add up to the gap.
func TestAffinityMakesPrefetchesAccurate(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 3775, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Workload: w, DeviceBlocks: 512, L3Blocks: 1024, Affinity: true, TransferTime: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Markdown())
	for _, m := range []ModeResult{res.Hintstream, res.Oracle} {
		if m.Prefetches != 18 || m.PrefetchAccurate != m.Prefetches || m.Pinned != m.Prefetches {
			t.Fatalf("%s: %d prefetches, %d accurate, %d turns pinned", m.Mode, m.Prefetches, m.PrefetchAccurate, m.Pinned)
		}
		l := m.Lost
		sum := l.NoWakeup + l.WrongWorker + l.LoadNotFinished + l.EvictedBeforeUse + l.PinLapsed + l.Rest
		if l.WrongWorker != 0 || math.Abs(sum-l.Total) > 1e-6*l.Total || math.Abs(l.Total-(res.Bound.Saving-m.Saving)) > 1e-6*l.Total {
			t.Fatalf("%s: lost %+v (rows add to %v), bound's saving − run's %v", m.Mode, l, sum, res.Bound.Saving-m.Saving)
		}
	}
	// The lost saving by mechanism: rows add up to the gap, none negative.
	mc := res.Mechanism
	rows := mc.Retention + mc.Placement + mc.Timing + mc.WrongWorker + mc.NoSignal
	gap := res.Bound.Saving - res.Hintstream.Saving
	if math.Abs(rows-mc.Total) > 1e-6*gap || math.Abs(mc.Total-gap) > 1e-6*gap ||
		min(mc.Retention, mc.Placement, mc.Timing, mc.WrongWorker, mc.NoSignal) < 0 {
		t.Fatalf("mechanism %+v: rows add to %v, gap %v", mc, rows, gap)
	}
	if len(res.ReachableBeaten) != 0 || !(res.Reachable.Saving <= res.Bound.Saving) {
		t.Fatalf("hint-reachable bound: beaten by %v; saves %v, clairvoyant %v", res.ReachableBeaten, res.Reachable.Saving, res.Bound.Saving)
	}
}
