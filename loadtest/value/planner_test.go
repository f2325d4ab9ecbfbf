package value

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// With the retention planner on, a real hintstream plans on the events'
// clock, its pins reach the simulated store's pin socket and are applied,
// and no run beats the bound (Run checks it).
func TestPlannerPinsThroughTheService(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 3775, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Workload: w, DeviceBlocks: 512, L3Blocks: 1024, Affinity: true, TransferTime: true, Planner: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Hintstream.Counters
	if c["hintstream_retention_plans_total"] == 0 || c["hintstream_retention_queued_total"] == 0 || c["hintstream_retention_pins_total"] == 0 {
		t.Fatalf("planner counters: plans %d, queued %d, pins %d", c["hintstream_retention_plans_total"], c["hintstream_retention_queued_total"], c["hintstream_retention_pins_total"])
	}
	// Every retention pin queued was applied by the store, beside the
	// tool-call pins (one per tool call, less those renewing a slot).
	if got := res.Hintstream.L3.Pins + res.Hintstream.L3.Releases; got < int64(c["hintstream_retention_queued_total"]) {
		t.Fatalf("store applied %d pin actions, planner queued %d", got, c["hintstream_retention_queued_total"])
	}
	if res.Hintstream.BadHints != 0 {
		t.Fatalf("%d bad hints", res.Hintstream.BadHints)
	}
}
