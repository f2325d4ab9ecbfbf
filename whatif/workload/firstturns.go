package workload

import (
	"cmp"
	"slices"
	"time"
)

// WakeFirstTurns gives every conversation's first turn a wake-up lead
// before it (not before the workload's start), as a frontend could that
// announces a thread when the user opens it, before the first message. A
// Mooncake trace has no such signal, so by default first turns get none;
// this measures what announcing them would be worth. It returns how many
// wake-ups it added.
func (w *Workload) WakeFirstTurns(lead time.Duration) int {
	lead = max(lead, 0)
	var start time.Duration
	if len(w.Events) > 0 {
		start = w.Events[0].At
	}
	n := 0
	for i := range w.Requests {
		r := &w.Requests[i]
		if r.Prev >= 0 || r.HasWakeup {
			continue
		}
		r.HasWakeup, r.WakeupAt = true, max(r.At-lead, start)
		w.Events = append(w.Events, Event{At: r.WakeupAt, Kind: KindWakeup, Request: i})
		n++
	}
	slices.SortStableFunc(w.Events, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Request, b.Request))
	})
	return n
}
