package metrics

// Ahead counts header-free prefetches (package ahead): predictions made,
// prefetches handed to the sender or refused, those not sent and why,
// and what became of those sent: bytes used by their turn, and bytes
// wasted (expired unused, or the turn went to another worker).
type Ahead struct {
	Predictions *CounterVec
	Skipped     *CounterVec
	Queued      *Counter
	Dropped     *CounterVec
	// Used and Wasted count prefetches, UsedBytes and WastedBytes their
	// KV bytes (tokens × --kv-bytes-per-token).
	Used, UsedBytes     *Counter
	Wasted, WastedBytes *CounterVec
}

// aheadWaste are the reasons a header-free prefetch's bytes are wasted.
var aheadWaste = []string{"expired", "wrong_worker", "evicted", "no_outcome"}

func newAhead(b builder) Ahead {
	return Ahead{
		Predictions: b.vec("hintstream_ahead_predictions_total", "kind", "Next turns predicted without a header, by what predicted them (a session's turn gaps, a tool call's learned time, a context's reuse gaps).", "turn", "tool", "context"),
		Skipped:     b.vec("hintstream_ahead_skipped_total", "reason", "Predicted next turns that got no header-free prefetch, by reason: unlikely (expected waste over the budget's ratio), trial (would-be prefetches not yet shown within the budget), over_budget (measured waste over --max-prefetch-waste), late (the turn came first, or the plan ran out before it was due), on_device (the router's worker still holds it), no_worker, encode; announced counts sessions left to their wake-ups.", "unlikely", "trial", "over_budget", "late", "on_device", "no_worker", "encode", "announced"),
		Queued:      b.counter("hintstream_ahead_queued_total", "Header-free prefetches handed to the sender's queue."),
		Dropped:     b.vec("hintstream_ahead_dropped_total", "reason", "Header-free prefetches the sender refused to queue, by reason.", dropReasons...),
		Used:        b.counter("hintstream_ahead_used_total", "Header-free prefetches used: a turn they predicted landed on their worker before they expired."),
		UsedBytes:   b.counter("hintstream_ahead_used_bytes_total", "KV bytes of the header-free prefetches used."),
		Wasted:      b.vec("hintstream_ahead_wasted_total", "reason", "Header-free prefetches never used, by reason (evicted: the part gone from the device before the turn came).", aheadWaste...),
		WastedBytes: b.vec("hintstream_ahead_wasted_bytes_total", "reason", "KV bytes of the header-free prefetches never used, by reason.", aheadWaste...),
	}
}
