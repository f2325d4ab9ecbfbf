package simulate

import (
	"testing"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/workload"
)

// The retention planner by hand, on one worker (3 device blocks) and an
// L3 of 5 pages of 4 tokens, every tool call and wake-up taken out so
// that today's engine sends nothing: conversation A (A1 ids 1 2 at 0 s,
// A ids 1 2 3 at 1 s, A2 ids 1 2 3 4 at 12 s), B (5 6 at 2 s), D (7 8 at
// 6 s).
//
// Without pins, D's write-through evicts 3 and then 2 (LRU), so A2 loads
// 1 from L3 and recomputes 12: A2 costs 0.25 × 4 + 12 = 13, in all 8 +
// 4 (A finds 1 2 on the device) + 8 + 8 + 13 = 41.
//
// The planner plans at A1 (its pages not in L3 yet: nothing pinned) and
// next at D's turn, 6 s later (one plan per 5 s of event time), before
// D is served. Pages 1 and 2, seen twice, rank first (expected reuses
// e^(−5 s / 10 min) ≈ 0.99, against ≈ 0.7 for pages seen once), so a
// budget of 2 pages pins both: D evicts 3 and then 6, and A2 loads 1 2:
// 0.25 × 8 + 8 = 10, in all 38. A budget of 1 page pins 1 alone, and D
// evicts 3 and 2 as without pins: 41.
func TestPlannerPinsWhatLRUWouldEvict(t *testing.T) {
	w := handWorkload(t, []workload.Record{
		{Timestamp: 0, InputLength: 8, OutputLength: 4, HashIDs: []uint64{1, 2}, Session: "a"},
		{Timestamp: 1000, InputLength: 12, OutputLength: 4, HashIDs: []uint64{1, 2, 3}, Session: "a"},
		{Timestamp: 2000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{5, 6}, Session: "b"},
		{Timestamp: 6000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{7, 8}, Session: "d"},
		{Timestamp: 12000, InputLength: 16, OutputLength: 4, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
	})
	unannounced(w)
	for i := range w.Requests {
		w.Requests[i].ToolCall, w.Requests[i].ToolTime = false, 0
	}
	page := int64(4 * schemas.DefaultKVBytesPerToken)
	pols := []Policy{policyNamed(t, Policies(), "today's + affinity"), policyNamed(t, Policies(), "planner")}
	for _, c := range []struct {
		budget     int64
		cost       float64
		l3Tokens   int64
		minPlanned int
	}{{2 * page, 38, 8, 1}, {page, 41, 4, 1}, {0, 38, 8, 1}} { // 0: half of 5 pages, 2 whole ones
		sim := simulateHand(t, Config{Workload: w, Workers: 1, DeviceBlocks: 3, L3Blocks: 5, L3PinBudget: c.budget}, pols...)
		today, pl := sim.Policies[0], sim.Policies[1]
		if sim.NoHints.Cost != 41 || today.Cost != 41 || today.PlannerPins != 0 || today.Pins != 0 {
			t.Fatalf("budget %d: no hints %v, today's %+v: want 41 and nothing sent", c.budget, sim.NoHints.Cost, today)
		}
		if pl.Cost != c.cost || pl.L3HitTokens != c.l3Tokens || pl.PlannerPins < c.minPlanned || pl.L3.PinsBroken != 0 {
			t.Fatalf("budget %d: planner cost %v, L3 tokens %d, planner pins %d, broken %d; want %v, %d",
				c.budget, pl.Cost, pl.L3HitTokens, pl.PlannerPins, pl.L3.PinsBroken, c.cost, c.l3Tokens)
		}
	}
}

// unannounced drops every wake-up: the frontend tells hintstream nothing
// before a turn.
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
