package engine

import (
	"context"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// Routed decodes one frame of a KV router's active_sequences_events
// subject (Dynamo's ActiveSequenceEvents, published with
// DYN_ROUTER_REPLICA_SYNC=true; eventplane.DecodeActiveSequences) and
// prefetches each AddRequest's prompt to the worker the router chose
// (OnRouted). A frame that does not decode is Rejected by its reason.
// The frame is acked once its prefetches are queued, not held until they
// leave: one frame may carry several requests' starts, and a routing-time
// prefetch lost to a crash costs only its head start.
func (e *Engine) Routed(ctx context.Context, d Delivery, m Message) Outcome {
	fr, err := eventplane.DecodeActiveSequences(m.Data, e.d.Limits)
	if err != nil {
		return Rejected(err)
	}
	d.Done = nil
	unknown := 0
	for i := range fr.Events {
		req := RoutedRequest(&fr.Events[i])
		if req == nil {
			continue
		}
		if !e.registered(req.WorkerID, req.DpRank) {
			// A hint for it would have no endpoint, and its pages no index.
			unknown++
			e.counters.HintsPrefetchSkipped.Inc("unknown_worker")
			e.log.Debug("routed request for a worker not registered", "request_id", req.RequestID,
				"worker_id", req.WorkerID, "dp_rank", req.DpRank)
			continue
		}
		// The router's clock at publishing: the request's start.
		req.ReceivedAtMs = int64(min(fr.Envelope.PublishedAt, maxEventMs))
		e.OnRouted(ctx, d, req)
	}
	if unknown > 0 {
		// Dead-lettered (the frame, once its other requests are hinted) so
		// that an operator sees which router names which worker.
		return Rejected(&schemas.DecodeError{Kind: KindRoutedRequest, Reason: metrics.ReasonUnknownWorker})
	}
	return Done()
}

// KindRoutedRequest is the DecodeError kind of a routing-time frame
// refused for what it names.
const KindRoutedRequest = "routed_request"

// registered reports whether the registry lists the worker with that dp
// rank; an empty registry tells nothing, so it lists every worker (as the
// request trace's consumer reads it).
func (e *Engine) registered(workerID uint64, rank uint32) bool {
	if e.workers == nil {
		return true
	}
	ws := e.workers.Workers()
	if len(ws) == 0 {
		return true
	}
	for _, w := range ws {
		if w.WorkerID == workerID {
			return int(rank) < len(w.HintEndpoints)
		}
	}
	return false
}

// maxEventMs bounds a publisher's clock read as a time (year 9999).
const maxEventMs = 253402300799999

// RoutedRequest is an AddRequest as the request event it starts, known by
// its sequence hashes (the router's rule, seeded by the request's LoRA
// adapter as the router seeds them) on the worker the router chose; nil
// for other events and for an AddRequest without hashes (active-block
// tracking off). The hashes' block size is the chosen worker's (the
// router hashes at its workers' block size); OnRouted fills it in.
func RoutedRequest(ev *eventplane.ActiveSequenceEvent) *schemas.RequestEvent {
	if ev.Kind != eventplane.SequenceAdd || ev.Add == nil || len(ev.Add.SequenceHashes) == 0 {
		return nil
	}
	req := &schemas.RequestEvent{RequestID: ev.RequestID, WorkerID: ev.WorkerID, DpRank: ev.DpRank,
		LoraName: ev.LoraName, SequenceHashes: ev.Add.SequenceHashes, SequenceHashScheme: schemas.HashSchemeRouter}
	if ev.Add.ISL != nil {
		req.PromptTokens = uint32(min(*ev.Add.ISL, 1<<32-1))
	}
	return req
}
