package value

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// TestAffinityCloselySpacedTurns (issue 26, finding 9): turns closer
// together than the wake-up lead, so that a session's next wake-up
// comes before its last turn (its record replaced by the time the turn
// asks). Each turn finds its own wake-up's worker, and every prefetch
// is accurate.
func TestAffinityCloselySpacedTurns(t *testing.T) {
	w, err := workload.Generate(workload.SyntheticConfig{Seed: 7, Sessions: 8, SessionInterval: 500 * time.Millisecond,
		MinTurns: 4, MaxTurns: 6, ToolCallProb: 0.5, ToolTime: 50 * time.Millisecond, ToolTimeSigma: 0.1,
		ThinkTime: 100 * time.Millisecond, WakeupLead: 3 * time.Second, FirstPromptTokens: 1024, PromptGrowth: 512})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Workload: w, DeviceBlocks: 512, L3Blocks: 1024, Affinity: true})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Hintstream
	t.Logf("closely spaced turns: %d prefetches, %d accurate (%.1f%%), %d turns sent to their wake-up's worker",
		m.Prefetches, m.PrefetchAccurate, 100*float64(m.PrefetchAccurate)/float64(max(m.Prefetches, 1)), m.Pinned)
	if m.Prefetches == 0 || m.PrefetchAccurate != m.Prefetches || m.Pinned != m.Prefetches {
		t.Fatalf("%d prefetches, %d accurate, %d turns pinned: want every one", m.Prefetches, m.PrefetchAccurate, m.Pinned)
	}
}
