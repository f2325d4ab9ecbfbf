package value

import (
	"context"
	"github.com/hintstream/hintstream/internal/race"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// forkedWorkload: sessions whose turns follow their responses within a
// few ms and fork into two branches (sometimes on the same ms), so a
// session's wake-ups interleave with its other branch's requests.
func forkedWorkload(tb testing.TB, cfg workload.ForkedConfig) *workload.Workload {
	w, err := workload.GenerateForked(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// TestAffinityForkedTurns (issue 26, finding 9): with affinity on, every
// prefetch of the forked workload is accurate: each turn is sent to the
// worker its own wake-up's prefetch went to, though another wake-up of
// its session came in between (a fork's sibling, or another branch's
// next turn). With one record per session, the turn whose record was
// replaced is routed without it: 95.2% and 92.8% accurate, 97 of 168 and
// 150 of 360 turns pinned (the reliability table, issue 26 rows).
func TestAffinityForkedTurns(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  workload.ForkedConfig
	}{
		{"sparse", workload.ForkedConfig{Seed: 26, Sessions: 24, Turns: 8}},
		{"dense", workload.ForkedConfig{Seed: 27, Sessions: 40, Turns: 10, SessionInterval: 100 * time.Millisecond, ForkProb: 0.7}},
	} {
		if race.Enabled && tc.name == "sparse" {
			continue // runs without -race (make test's sim pass)
		}
		t.Run(tc.name, func(t *testing.T) { testForkedTurns(t, forkedWorkload(t, tc.cfg)) })
	}
}

func testForkedTurns(t *testing.T, w *workload.Workload) {
	interleaved := 0 // turns whose session woke up again (after them) before them
	for i := range w.Requests {
		r := &w.Requests[i]
		if !r.HasWakeup {
			continue
		}
		for j := range w.Requests {
			o := &w.Requests[j]
			if j != i && o.HasWakeup && o.Session == r.Session && (o.WakeupAt > r.WakeupAt || o.WakeupAt == r.WakeupAt && j > i) && o.WakeupAt <= r.At {
				interleaved++
				break
			}
		}
	}
	if interleaved == 0 {
		t.Fatal("the forked workload has no turn whose session woke up again before it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Workload: w, DeviceBlocks: 512, L3Blocks: 4096, Affinity: true})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Hintstream
	t.Logf("forked turns: %d requests, %d interleaved; %d prefetches, %d accurate (%.1f%%), %d turns pinned",
		len(w.Requests), interleaved, m.Prefetches, m.PrefetchAccurate,
		100*float64(m.PrefetchAccurate)/float64(max(m.Prefetches, 1)), m.Pinned)
	if m.Prefetches == 0 || m.PrefetchAccurate < m.Prefetches*99/100 || m.Pinned < m.Prefetches*99/100 {
		t.Fatalf("%d of %d prefetches accurate, %d turns pinned: want at least 99%%", m.PrefetchAccurate, m.Prefetches, m.Pinned)
	}
}
