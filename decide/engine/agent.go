package engine

import (
	"context"
	"errors"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
)

// errSynthetic marks the Delivery of a hint no stream event triggered
// (an agent's tool event or the end of a turn): its time is the engine's
// clock, and nothing waits for it to be settled.
var errSynthetic = errors.New("engine: no stream event behind this hint")

// Sent is where a prefetch went.
type Sent struct {
	WorkerID uint64
	DpRank   uint32
	Expires  time.Time
}

// PrefetchContext sends a kv.prefetch of req's tokens to the worker a
// request with them would be routed to, recorded in affinity as a
// wake-up's is (the agent's tool returned, or a turn asked for
// speculative prefill). It reports where the hint went.
func (e *Engine) PrefetchContext(req *schemas.RequestEvent) (Sent, bool) {
	cand, expires, ok := e.prefetchTo(Delivery{Unknown: errSynthetic}, req)
	if !ok {
		return Sent{}, false
	}
	return Sent{WorkerID: cand.Worker.WorkerID, DpRank: cand.Worker.DpRank, Expires: expires}, true
}

// PinContext pins a turn's pages as a tool-call response would: resp
// names the turn's request (in the request index), its worker and output
// tokens, and the tool. It reports whether a pin was queued; pins off,
// nothing is.
func (e *Engine) PinContext(ctx context.Context, resp *schemas.ResponseEvent) bool {
	if e.pins == nil {
		return false
	}
	// Delivered 5: a request missing from the index is not waited for.
	queued, _ := e.pins.OnResponse(ctx, resp, pins.Arrival{Time: e.now(), Delivered: 5, Quiet: true})
	return queued
}

// DeviceBlocks is how many leading blocks of req's tokens the index shows
// on worker's device (dp rank dpRank) now; -1 when the worker is not a
// candidate for req.
func (e *Engine) DeviceBlocks(req *schemas.RequestEvent, worker uint64, dpRank uint32) int {
	_, cands, err := e.selector.Choose(req)
	if err != nil {
		return -1
	}
	for _, c := range cands {
		if c.Worker.WorkerID == worker && c.Worker.DpRank == dpRank {
			return c.Overlap
		}
	}
	return -1
}

// PinTTL is how long a pin for tool would last (the pins' learned time
// and TTL policy); 0 with pins off.
func (e *Engine) PinTTL(tool string) time.Duration {
	if e.pins == nil {
		return 0
	}
	expected, _ := e.pins.Learner.Expected([]string{tool})
	return e.pins.TTL.TTL(expected)
}
