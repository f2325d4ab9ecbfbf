package value

import (
	"context"
	"github.com/hintstream/hintstream/internal/race"
	"math"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// The in-process engine on the simulated clock (Simulate) and the real
// service over NATS and ZeroMQ with lockstep waits (Run) make the same
// decisions on the same workload: their savings agree within 2%, and so
// do their prefetches and pins.
func TestSimulateAgreesWithTheRealService(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 3775, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	modes := []bool{false, true}
	if race.Enabled { // both run without -race (make test's sim pass)
		modes = modes[1:]
	}
	for _, affinity := range modes {
		cfg := Config{Workload: w, DeviceBlocks: 512, L3Blocks: 1024, TransferTime: true, Affinity: affinity}
		real, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sim, err := simulate.Simulate(ctx, cfg, []simulate.Policy{{Name: "today", Affinity: affinity}})
		if err != nil {
			t.Fatal(err)
		}
		got, want := sim.Policies[0], real.Hintstream
		t.Logf("affinity %v: real service saves %.0f in %v; in process %.0f in %v", affinity, want.Saving, want.Elapsed, got.Saving, got.Elapsed)
		if want.Saving <= 0 || math.Abs(got.Saving-want.Saving) > 0.02*want.Saving {
			t.Fatalf("affinity %v: in-process saving %.0f, real service %.0f: more than 2%% apart", affinity, got.Saving, want.Saving)
		}
		if got.Prefetches != want.Prefetches || got.Pins != want.Pins {
			t.Fatalf("affinity %v: in process %d prefetches %d pins, real service %d and %d", affinity,
				got.Prefetches, got.Pins, want.Prefetches, want.Pins)
		}
		if sim.NoHints.Cost != real.NoHints.Cost || sim.Bound.Cost != real.Bound.Cost {
			t.Fatalf("baselines differ: no hints %v/%v, bound %v/%v", sim.NoHints.Cost, real.NoHints.Cost, sim.Bound.Cost, real.Bound.Cost)
		}
	}
}
