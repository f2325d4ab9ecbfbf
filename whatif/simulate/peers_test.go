package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// handWorkload builds a workload of 4-token blocks from records
// (timestamp ms, input and output length, ids).
func handWorkload(t *testing.T, recs []workload.Record) *workload.Workload {
	t.Helper()
	w, err := workload.FromRecords(recs, workload.TraceOptions{BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func simulateHand(t *testing.T, cfg Config, pols ...Policy) Simulation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sim, err := Simulate(ctx, cfg, pols)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func policyNamed(t *testing.T, pols []Policy, name string) Policy {
	t.Helper()
	for _, p := range pols {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no policy %q", name)
	return Policy{}
}

// Dynamo's speculative prefill on one worker (device 8 blocks, L3 8
// pages), worked by hand. Turn A (ids 1 2, 8 tokens, 4 out) then its
// next turn A2 (ids 1 2 3 4, 16 tokens) 10 s later:
//
//   - A recomputes 8 tokens. Its response's warm-up is A's prompt and
//     output (A2's first 12 tokens, blocks 1 2 3): blocks 1 2 on the
//     device, block 3 recomputed: 4 tokens.
//   - A2 finds blocks 1 2 3 on the device (12 tokens) and recomputes 4.
//     Its warm-up (its 16 tokens and 4 out, 5 blocks) finds 4 blocks on
//     the device and recomputes 4.
//
// Cost 8 + 4 + 4 + 4 = 20 against no hints' 8 + 8 = 16 (A2 finds only
// 1 2): the warm-ups move prefill, they do not save it. The bound costs
// 16 too, so the mechanism breakdown charges 8 to the warm-ups and
// nets A2's block 3 (found, the bound recomputes it) as a gain of 4.
func TestSpeculativePrefillHand(t *testing.T) {
	w := handWorkload(t, []workload.Record{
		{Timestamp: 0, InputLength: 8, OutputLength: 4, HashIDs: []uint64{1, 2}, Session: "a"},
		{Timestamp: 10000, InputLength: 16, OutputLength: 4, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
	})
	pol := policyNamed(t, Peers(), "Dynamo speculative prefill")
	sim := simulateHand(t, Config{Workload: w, Workers: 1, DeviceBlocks: 8, L3Blocks: 8}, pol)
	got, none := sim.Policies[0], sim.NoHints
	if none.Cost != 16 || got.Cost != 20 || got.Warmups != 2 || got.WarmupTokens != 8 || got.WarmupCost != 8 ||
		got.DeviceHitTokens != 12 || got.RecomputedTokens != 12 || got.Pins != 0 || got.Prefetches != 0 {
		t.Fatalf("no hints cost %v; speculative prefill %+v", none.Cost, got)
	}
	m := got.Mechanism
	if m == nil || m.Warmup != 8 || m.Gains != -4 || m.Total != 4 || sim.Bound.Cost != 16 {
		t.Fatalf("bound %v, mechanism %+v", sim.Bound.Cost, m)
	}
}

// ttlWorkload: conversation X (X1 ids 11, X2 ids 11 12 0.3 s later, so
// one tool time of 0.3 − 0.0802 s is seen), then A (ids 1 2 at 1 s,
// a tool call), B (5 6 at 3 s), D (7 8 at 5 s) and A2 (1 2 3 4 at
// 11 s), on one worker of 2 device blocks and an L3 of 4 pages.
func ttlWorkload(t *testing.T) *workload.Workload {
	return handWorkload(t, []workload.Record{
		{Timestamp: 0, InputLength: 4, OutputLength: 4, HashIDs: []uint64{11}, Session: "x"},
		{Timestamp: 300, InputLength: 8, OutputLength: 4, HashIDs: []uint64{11, 12}, Session: "x"},
		{Timestamp: 1000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{1, 2}, Session: "a"},
		{Timestamp: 3000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{5, 6}, Session: "b"},
		{Timestamp: 5000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{7, 8}, Session: "d"},
		{Timestamp: 11000, InputLength: 16, OutputLength: 4, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
	})
}

// Tool-call TTL worked by hand on ttlWorkload. In L3 (LRU), B's
// write-through evicts X's 12 and 11; D's would evict A's 2 and 1, so
// without pins A2 finds nothing and recomputes 16: no hints cost 4 (X1)
// + 4 (X2 finds 11 on the device) + 8 + 8 + 8 + 16 = 48.
//
//   - Fixed 60 s: A's response pins 1 2 (its response's page 3 is in no
//     store) until 61.08 s; D evicts B's 6 and 5 instead, and A2 loads
//     1 2 from L3: 0.25 × 8 + 8 = 10, in all 42, L3 hits 8 tokens.
//   - Learned: A's TTL is the one tool time seen, X's 0.2198 s, so its
//     pin has lapsed by D: 48, as without pins.
//
// Both pin at X1 (60 s: no tool time seen yet) and at A, and release at
// the next turn's response.
func TestToolCallTTLHand(t *testing.T) {
	w := ttlWorkload(t)
	fixed := policyNamed(t, Peers(), "tool-call TTL (60 s)")
	learned := policyNamed(t, Peers(), "tool-call TTL (learned per tool)")
	sim := simulateHand(t, Config{Workload: w, Workers: 1, DeviceBlocks: 2, L3Blocks: 4}, fixed, learned)
	f, l := sim.Policies[0], sim.Policies[1]
	if sim.NoHints.Cost != 48 {
		t.Fatalf("no hints cost %v, want 48", sim.NoHints.Cost)
	}
	if f.Cost != 42 || f.L3HitTokens != 8 || f.Pins != 2 || f.Releases != 2 || f.L3.PinsBroken != 0 {
		t.Fatalf("fixed TTL: %+v", f)
	}
	if l.Cost != 48 || l.L3HitTokens != 0 || l.Pins != 2 || l.Releases != 2 {
		t.Fatalf("learned TTL: %+v", l)
	}
}

// The learned TTL is the nearest-rank 90th percentile of the latest
// learnWindow tool times.
func TestToolTimesQuantile(t *testing.T) {
	var tt toolTimes
	for _, s := range []int{7, 3, 10, 1, 5, 2, 9, 4, 8, 6} {
		tt.add(time.Duration(s) * time.Second)
	}
	if got := tt.quantile(learnQuantile); got != 9*time.Second {
		t.Fatalf("p90 of 1..10 s: %v", got)
	}
	for range learnWindow {
		tt.add(time.Minute)
	}
	if got := tt.quantile(0.01); got != time.Minute || len(tt.sorted) != learnWindow {
		t.Fatalf("after a window of minutes: p1 %v, %d held", got, len(tt.sorted))
	}
}

// ARC as a peer, by hand: ttlWorkload and, at 6 s, Y (ids 11: X's
// first page, not a turn of X). ARC (L3 of 4 pages):
//
//   - X2 hits 11 (T1 → T2) and adds 12 (T1); A adds 2 and 1: T1 1 2 12,
//     T2 11.
//   - B's 6 evicts T1's oldest, 12 (T1 over its target 0); its 5, with
//     T1 and B1 the whole store's worth, drops ghost 12 and evicts 2.
//     D's 8 and 7 evict 1 and 6 alike: T1 7 8 5, T2 11.
//   - Y finds 11 in T2: 0.25 × 4 = 1. A2 finds nothing: 16.
//
// In all 4 + 4 + 8 + 8 + 8 + 1 + 16 = 49. LRU (no hints) lets B evict
// 12 and 11 (the oldest), so Y recomputes 4: 52.
func TestARCPeerHand(t *testing.T) {
	recs := []workload.Record{
		{Timestamp: 0, InputLength: 4, OutputLength: 4, HashIDs: []uint64{11}, Session: "x"},
		{Timestamp: 300, InputLength: 8, OutputLength: 4, HashIDs: []uint64{11, 12}, Session: "x"},
		{Timestamp: 1000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{1, 2}, Session: "a"},
		{Timestamp: 3000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{5, 6}, Session: "b"},
		{Timestamp: 5000, InputLength: 8, OutputLength: 4, HashIDs: []uint64{7, 8}, Session: "d"},
		{Timestamp: 6000, InputLength: 4, OutputLength: 4, HashIDs: []uint64{11}, Session: "y"},
		{Timestamp: 11000, InputLength: 16, OutputLength: 4, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
	}
	w := handWorkload(t, recs)
	if w.Req(5).Prev >= 0 {
		t.Fatalf("Y linked to request %d: want a conversation of its own", w.Req(5).Prev)
	}
	pol := policyNamed(t, Peers(), "ARC L3 eviction")
	sim := simulateHand(t, Config{Workload: w, Workers: 1, DeviceBlocks: 2, L3Blocks: 4}, pol)
	if got := sim.Policies[0]; sim.NoHints.Cost != 52 || got.Cost != 49 || got.L3HitTokens != 4 || got.Pins != 0 {
		t.Fatalf("no hints cost %v; ARC %+v", sim.NoHints.Cost, got)
	}
}

// A running request's blocks stay on its device until its response
// ends, in every row. One worker of 4 device blocks, L3 of 1 page: A
// (ids 1 2, 8 tokens, 8 out) runs until 160.4 ms; B (ids 5 6 7) comes at
// 10 ms and finds room for 2 of its blocks beside A's; A2 (A's next
// turn, ids 1 2 3 4) at 200 ms finds A's 2 blocks on the device (8
// tokens). Before, B took A's block 2 and A2 found 4 tokens.
func TestRunningRequestsKeepTheirBlocks(t *testing.T) {
	w := handWorkload(t, []workload.Record{
		{Timestamp: 0, InputLength: 8, OutputLength: 8, HashIDs: []uint64{1, 2}, Session: "a"},
		{Timestamp: 10, InputLength: 12, OutputLength: 1, HashIDs: []uint64{5, 6, 7}, Session: "b"},
		{Timestamp: 200, InputLength: 16, OutputLength: 1, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
	})
	sim := simulateHand(t, Config{Workload: w, Workers: 1, DeviceBlocks: 4, L3Blocks: 1},
		policyNamed(t, Peers(), "Dynamo speculative prefill"))
	if got := sim.NoHints; got.DeviceHitTokens != 8 || got.Cost != 8+12+8 {
		t.Fatalf("no hints %+v", got)
	}
}

// A predicted prefetch that fires long before its turn (its affinity
// record expired, as the frontend's would) is sent again at the tool's
// end to the worker it went to, as the agent tracker does, and the turn
// is routed there: every announced turn is pinned by affinity and runs
// where its prefetches went. Ten 1 s tool calls teach the
// prediction (8 are needed); the last call takes 20 s, so its
// prediction fires about 19 s ahead of the turn, past the 2 s TTL.
func TestEarlyPredictionIsSentAgainToItsWorker(t *testing.T) {
	var recs []workload.Record
	var ts int64
	for k := range 12 {
		recs = append(recs, workload.Record{Timestamp: ts, InputLength: 8 + 4*k, OutputLength: 4,
			HashIDs: ids(1, uint64(2+k)), Session: "a", FinishReason: workload.FinishToolCalls, Tool: "bash"})
		ts += 1000
		if k == 10 {
			ts += 19000
		}
	}
	w := handWorkload(t, recs)
	st := w.Stats().Signals
	if st.Predicted == 0 {
		t.Fatalf("no predicted wake-ups: %+v", st)
	}
	early := w.Req(11)
	if !early.WakeupPredicted() || early.At-early.WakeupAt < 10*time.Second {
		t.Fatalf("the last turn's wake-up: predicted %v, lead %v", early.WakeupPredicted(), early.At-early.WakeupAt)
	}
	pols := Policies()
	sim := simulateHand(t, Config{Workload: w, Workers: 2, DeviceBlocks: 64, L3Blocks: 64, TransferTime: true},
		policyNamed(t, pols, "today's + affinity"))
	r := sim.Policies[0]
	if r.Wakeups != 11 || r.Prefetches != 12 || r.Pinned != 11 || r.PrefetchAccurate != 11 {
		t.Fatalf("wake-ups %d (want 11), prefetches %d (want 12: one sent again), pinned %d (want 11), turns where their prefetch went %d (want 11)",
			r.Wakeups, r.Prefetches, r.Pinned, r.PrefetchAccurate)
	}
}

// ids is lo, lo+1, …, hi.
func ids(lo, hi uint64) []uint64 {
	var out []uint64
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// With affinity, a tool call's next turn signalled at the tool's end (no
// lead) is prefetched on the worker that answered the call, as the agent
// tracker names it, though the engine would pick the idle worker: B's
// long request, which shares A's first block (too few to be its next
// turn), runs on A's worker when A's tool ends. A2 then finds A1's 10
// blocks on the device (40 tokens, B's 4 besides); prefetched on the
// other worker it would load them from L3.
func TestToolEndTurnStaysWhereItsContextIs(t *testing.T) {
	recs := []workload.Record{
		{Timestamp: 0, InputLength: 40, OutputLength: 4, HashIDs: ids(1, 10), Session: "a", FinishReason: workload.FinishToolCalls, Tool: "bash"},
		{Timestamp: 100, InputLength: 800, OutputLength: 500, HashIDs: append(ids(1, 1), ids(1000, 1198)...), Session: "b", FinishReason: "stop"},
		{Timestamp: 1000, InputLength: 48, OutputLength: 4, HashIDs: ids(1, 12), Session: "a", FinishReason: "stop"},
	}
	w, err := workload.FromRecords(recs, workload.TraceOptions{BlockSize: 4, Signals: workload.Signals{Tool: workload.SignalToolEnd}})
	if err != nil {
		t.Fatal(err)
	}
	if r := w.Req(2); !r.WakeupAtToolEnd() || r.WakeupAt != r.At {
		t.Fatalf("A2's wake-up: at the tool's end %v, at %v (turn at %v)", r.WakeupAtToolEnd(), r.WakeupAt, r.At)
	}
	sim := simulateHand(t, Config{Workload: w, Workers: 2, DeviceBlocks: 512, L3Blocks: 512, TransferTime: true},
		policyNamed(t, Policies(), "today's + affinity"))
	r := sim.Policies[0]
	if r.Pinned != 1 || r.DeviceHitTokens != 44 {
		t.Fatalf("A2 pinned %d (want 1), device-hit tokens %d (want 44: B's 4 and A2's 40)", r.Pinned, r.DeviceHitTokens)
	}
}
