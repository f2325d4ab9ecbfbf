package engine

import (
	"context"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// place is the worker a prefetch of req goes to: the one the router
// already chose when req names it (Dynamo's AddRequest), else the
// selector's choice by overlap. A non-empty reason says why there is
// none: no_worker (no candidate serves the model), unknown_worker (the
// router's worker is not registered, or not for req's model).
func (e *Engine) place(req *schemas.RequestEvent) (routing.Candidate, string) {
	if req.WorkerID == 0 {
		c, err := e.selector.Select(req)
		if err != nil {
			return routing.Candidate{}, "no_worker"
		}
		return c, ""
	}
	want := kvevents.WorkerKey{WorkerID: req.WorkerID, DpRank: req.DpRank}
	for _, c := range e.selector.Candidates(req) {
		if c.Worker == want {
			if req.SequenceBlockSize == 0 && len(req.SequenceHashes) > 0 {
				// The router's hashes (AddRequest) are at its workers' block size.
				req.SequenceBlockSize = uint32(c.BlockSize)
			}
			return c, ""
		}
	}
	return routing.Candidate{}, "unknown_worker"
}

// pages are the engine block hashes of the leading prompt blocks that
// seqHashes name, for a prefetch to target: those target's own KV events
// reported on any tier, continued by those of the worker holding the
// longest device prefix (ties: the lowest worker id and dp rank). Engines
// of one deployment hash a block's content alike (SGLang's page hash,
// vLLM's with a fixed hash seed), so another worker's names for a block
// are target's too.
func (e *Engine) pages(target kvevents.WorkerKey, seqHashes []uint64) []uint64 {
	p := e.index.Pages(target, seqHashes)
	if len(p) == len(seqHashes) {
		return p
	}
	best, depth := kvevents.WorkerKey{}, len(p)
	for k, d := range e.index.Overlap(seqHashes) {
		if k != target && (d > depth || d == depth && d > len(p) && less(k, best)) {
			best, depth = k, d
		}
	}
	if depth > len(p) {
		if q := e.index.Pages(best, seqHashes); len(q) > len(p) {
			p = append(p[:len(p):len(p)], q[len(p):]...)
		}
	}
	return p
}

func less(a, b kvevents.WorkerKey) bool {
	return a.WorkerID < b.WorkerID || a.WorkerID == b.WorkerID && a.DpRank < b.DpRank
}

// OnRouted decides on a request the router has just placed (Dynamo's
// AddRequest, with replica sync on a NATS event plane): prefetch its
// prompt's pages to the worker it names (req.WorkerID), or to the one the
// selector picks when it names none. It is the routing-time trigger, the
// earliest moment today's Dynamo says a request exists; it neither indexes
// the request for pins nor releases a session's pin (it has no session).
func (e *Engine) OnRouted(ctx context.Context, d Delivery, req *schemas.RequestEvent) Outcome {
	e.counters.RequestsReceived.Inc()
	_, _, queued := e.prefetchTo(d, req)
	if queued {
		return HeldUntilSent()
	}
	return Done()
}
