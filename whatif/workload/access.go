package workload

// A workload is read through these methods, not through Requests and
// Events directly, so that one too long to hold (whatif on a long trace)
// can stay on disk (Spool) and be read back a stretch at a time. A
// workload built in memory answers from Requests and Events.

// backing is a workload kept elsewhere than in Requests and Events.
// Req's copies may be shared by goroutines reading at once; Hold and
// Release are not called while anything reads.
type backing interface {
	len() int
	numEvents() int
	// req returns request i: the held one, else a copy read back (edits
	// to a copy are lost).
	req(i int) *Request
	// events returns events [from, to), valid until the next call.
	events(from, to int) []Event
	hold(i int)
	release(i int)
	// err is the first error reading back failed with (then req and
	// events return zero values: the caller checks Err between stretches).
	err() error
	close() error
}

// Len is the number of requests.
func (w *Workload) Len() int {
	if w.back != nil {
		return w.back.len()
	}
	return len(w.Requests)
}

// Req returns request i. For a workload kept on disk it is the held
// request (Hold), else a copy read back whose edits are lost.
func (w *Workload) Req(i int) *Request {
	if w.back != nil {
		return w.back.req(i)
	}
	return &w.Requests[i]
}

// NumEvents is the number of events.
func (w *Workload) NumEvents() int {
	if w.back != nil {
		return w.back.numEvents()
	}
	return len(w.Events)
}

// EventRange returns events [from, to) in play order. For a workload
// kept on disk the slice is valid until the next call.
func (w *Workload) EventRange(from, to int) []Event {
	if w.back != nil {
		return w.back.events(from, to)
	}
	return w.Events[from:to]
}

// Hold keeps request i in memory until Release, so that what is set on
// Req(i) (its HashIDs) stays. A workload in memory holds every request.
// Not to be called while anything reads the workload.
func (w *Workload) Hold(i int) {
	if w.back != nil {
		w.back.hold(i)
	}
}

// Release ends Hold(i).
func (w *Workload) Release(i int) {
	if w.back != nil {
		w.back.release(i)
	}
}

// Err is the first error reading a workload kept on disk back failed
// with; nil for one in memory.
func (w *Workload) Err() error {
	if w.back != nil {
		return w.back.err()
	}
	return nil
}

// Close removes what a workload kept on disk wrote; a no-op in memory.
func (w *Workload) Close() error {
	if w.back != nil {
		return w.back.close()
	}
	return nil
}
