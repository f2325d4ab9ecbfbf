package engine

import (
	"context"

	"github.com/hintstream/hintstream/ingest/eventplane"
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
	for i := range fr.Events {
		if req := RoutedRequest(&fr.Events[i]); req != nil {
			// The router's clock at publishing: the request's start.
			req.ReceivedAtMs = int64(min(fr.Envelope.PublishedAt, maxEventMs))
			e.OnRouted(ctx, d, req)
		}
	}
	return Done()
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
