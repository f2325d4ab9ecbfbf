package service

import (
	"context"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/schemas"
)

// decideRequest is the request consumer's decision. A frame of a KV
// router's active_sequences_events subject (captured in the request
// stream with --dynamo-active-sequences) is a routing-time start, which
// prefetches to the router's worker (engine.Routed); anything else is a
// request event (engine.Request).
func (s *Service) decideRequest(ctx context.Context, d engine.Delivery, m engine.Message) engine.Outcome {
	if eventplane.IsActiveSequencesSubject(m.Subject) {
		return s.engine.Routed(ctx, d, m)
	}
	return s.engine.Request(ctx, d, m)
}

// traceSequences gives a request_end's response its prompt's sequence
// hashes, so that its tool-call pin names the pages the serving worker
// reported for them with no token ids anywhere: the full blocks' hashes
// (the partial tail's dropped) at the record's trace_block_size. Dynamo
// takes them with BlockHashOptions::default(), whatever the request's
// LoRA adapter or cache salt (lib/llm/src/request_trace/replay.rs@0366e63a),
// so they are unsalted.
func traceSequences(resp *schemas.ResponseEvent, r *requesttrace.Replay) {
	full := r.Full()
	if resp == nil || len(full) == 0 || r.TraceBlockSize > 1<<32-1 {
		return
	}
	resp.SequenceHashes, resp.SequenceBlockSize = full, uint32(r.TraceBlockSize)
	resp.PromptTokens = uint32(min(r.InputLength, 1<<32-1))
	resp.SequenceHashScheme = schemas.HashSchemeUnsalted
}
