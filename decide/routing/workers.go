package routing

import "github.com/hintstream/hintstream/schemas"

// ModelWorkers is a registry view that keeps candidates per model
// (registry.Registry does): WorkersFor(model) returns the records serving
// model (naming it or no model), sorted by worker id, every record for
// "", at a cost that does not grow with other models' records. The slice
// is shared and must not be modified. A Workers without it is listed
// whole on every choice.
type ModelWorkers interface {
	WorkersFor(model string) []schemas.WorkerRecord
}

// workersFor lists the records a request for model may be routed to (the
// candidates loop still filters, so a plain Workers gives the same
// answer, at the cost of the whole registry).
func (s *Selector) workersFor(model string) []schemas.WorkerRecord {
	if mw, ok := s.workers.(ModelWorkers); ok {
		return mw.WorkersFor(model)
	}
	return s.workers.Workers()
}
