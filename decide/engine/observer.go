package engine

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
)

// Observer is the one way to extend the engine (EngineDeps.Observers):
// it is told of each request and response the engine decided on, after
// the engine's own decisions, with the event as the engine decoded it
// and its time; nothing is decoded twice. The agent tracker (which
// follows what became of the engine's hints) is one. An Observer that is also a pins.Observer hears each pin and
// renewal too (pins on).
//
// Its methods are called from the consumers' goroutines, in the order of
// EngineDeps.Observers, and must not block. A request is reused once
// they return: an observer copies what it keeps of one.
type Observer interface {
	ObserveRequest(ctx context.Context, r ObservedRequest)
	ObserveResponse(ctx context.Context, r ObservedResponse)
}

// ObservedRequest is a request the engine decided on. A turn whose
// decisions failed for now (it is redelivered) is told when it is
// decided on again.
type ObservedRequest struct {
	// At is the event's time: its own stamp, else its stream time; zero
	// when neither is known.
	At    time.Time
	Event *schemas.RequestEvent
	// Wakeup says the request opens a thread (HeaderWakeup); otherwise
	// it is a turn.
	Wakeup bool
	// Prefetched says a wake-up's prefetch was queued, to Sent.
	Prefetched bool
	Sent       Sent
}

// ObservedResponse is a response the engine decided on, whatever the
// outcome (one retried is told again).
type ObservedResponse struct {
	At    time.Time // as ObservedRequest.At
	Event *schemas.ResponseEvent
}

func (e *Engine) observeRequest(ctx context.Context, r ObservedRequest) {
	for _, o := range e.observers {
		o.ObserveRequest(ctx, r)
	}
}

func (e *Engine) observeResponse(ctx context.Context, r ObservedResponse) {
	for _, o := range e.observers {
		o.ObserveResponse(ctx, r)
	}
}

// pinObservers are the observers that hear the pins (pins.Observer).
type pinObservers []pins.Observer

func (ps pinObservers) Pinned(session string, worker uint64, dpRank uint32, tokens int, expires time.Time) {
	for _, p := range ps {
		p.Pinned(session, worker, dpRank, tokens, expires)
	}
}

func (ps pinObservers) Renewed(session string, expires time.Time) {
	for _, p := range ps {
		p.Renewed(session, expires)
	}
}
