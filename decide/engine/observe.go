package engine

import (
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// PrefetchObserver hears each wake-up prefetch and each turn (a request
// that is not a wake-up), so that what became of the prefetch can be
// told from its session's next request and response (package agents).
// Its methods are called from the requests consumer and must not block;
// req is reused after they return.
type PrefetchObserver interface {
	Prefetched(req *schemas.RequestEvent, worker uint64, dpRank uint32, expires time.Time)
	Turn(req *schemas.RequestEvent)
}

// ObservePrefetches sets the observer of wake-up prefetches and turns;
// it must be called before the engine is given events.
func (e *Engine) ObservePrefetches(o PrefetchObserver) { e.prefetchObs = o }
