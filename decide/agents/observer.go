package agents

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
)

// Observer is the tracker as one of the engine's observers
// (engine.EngineDeps.Observers): it follows each agent's turns and
// responses, and what became of the engine's own wake-up prefetches and
// tool-call pins, from the events the engine decoded.
func (t *Tracker) Observer() engine.Observer { return observer{t} }

type observer struct{ t *Tracker }

var _ pins.Observer = observer{}

func (o observer) ObserveRequest(_ context.Context, r engine.ObservedRequest) {
	if r.Prefetched {
		o.t.Prefetched(r.Event, r.Sent.WorkerID, r.Sent.DpRank, r.Sent.Expires)
	}
	if !r.Wakeup {
		o.t.Turn(r.Event)
	}
	o.t.ObserveRequest(r.Event)
}

func (o observer) ObserveResponse(_ context.Context, r engine.ObservedResponse) {
	o.t.ObserveResponse(r.Event)
}

func (o observer) Pinned(session string, worker uint64, dpRank uint32, tokens int, expires time.Time) {
	o.t.Pinned(session, worker, dpRank, tokens, expires)
}

func (o observer) Renewed(session string, expires time.Time) { o.t.Renewed(session, expires) }
