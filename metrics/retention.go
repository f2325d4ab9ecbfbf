package metrics

// Retention counts the retention planner's work: its pin actions
// (pins, renewals and releases of its slots) handed to the sender, those
// the sender refused, and its plans.
type Retention struct {
	Queued  *Counter
	Dropped *CounterVec
	Plans   *Counter
	// Pins, Renewals and Releases split Queued by what the action did to
	// its slot.
	Pins, Renewals, Releases *Counter
	// Skipped counts turns the planner could not map to store pages, by
	// reason.
	Skipped *CounterVec
}

func newRetention(b builder) Retention {
	return Retention{
		Queued:   b.counter("hints.retain.queued", "Retention planner pin actions (pins, renewals, releases of its slots) handed to the sender's queue."),
		Dropped:  b.vec("hints.retain.dropped", "reason", "Retention planner pin actions the sender refused to queue, by reason.", dropReasons...),
		Plans:    b.counter("retention.plans", "Plans the retention planner made (one per --retention-interval of event time with traffic)."),
		Pins:     b.counter("retention.pins", "Retention slots pinned afresh."),
		Renewals: b.counter("retention.renewals", "Retention slots pinned again: new keys, or a renewal before the pin lapses."),
		Releases: b.counter("retention.releases", "Retention slots released because nothing in them stays within the budget."),
		Skipped:  b.vec("retention.skipped", "reason", "Turns the retention planner could not map to store pages, by reason.", "no_layout", "no_full_page"),
	}
}
