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
	// Group: one planner across a consumer group (retention_group.go).
	Group RetentionGroup
}

func newRetention(b builder) Retention {
	return Retention{
		Queued:   b.counter("hintstream_retention_queued_total", "Retention planner pin actions (pins, renewals, releases of its slots) handed to the sender's queue."),
		Dropped:  b.vec("hintstream_retention_dropped_total", "reason", "Retention planner pin actions the sender refused to queue, by reason.", dropReasons...),
		Plans:    b.counter("hintstream_retention_plans_total", "Plans the retention planner made (one per --retention-interval of event time with traffic)."),
		Pins:     b.counter("hintstream_retention_pins_total", "Retention slots pinned afresh."),
		Renewals: b.counter("hintstream_retention_renewals_total", "Retention slots pinned again: new keys, or a renewal before the pin lapses."),
		Releases: b.counter("hintstream_retention_releases_total", "Retention slots released because nothing in them stays within the budget."),
		Group:    newRetentionGroup(b),
		Skipped:  b.vec("hintstream_retention_skipped_total", "reason", "Turns the retention planner could not map to store pages, by reason.", "no_layout", "no_full_page", "unknown_namespace"),
	}
}
