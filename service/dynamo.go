package service

import (
	"context"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/schemas"
)

// startTurn hands a request_end's request to the engine's request path
// before its response: with pins on it indexes the request, releases the
// session's previous pin and learns the tool's time from the gap between
// that pin's response and this request's receipt. The trace has no record
// at a request's start, so the release comes when the next turn ends, a
// turn later than a frontend's request event would give it (the pin
// outlives the tool by the turn's own duration). A request carrying the
// wake-up header is not a turn (engine.OnRequest).
func startTurn(ctx context.Context, e *engine.Engine, d engine.Delivery, req *schemas.RequestEvent) engine.Outcome {
	if req == nil {
		return engine.Done()
	}
	d.Done = nil // the record is settled by its response's outcome
	return e.OnRequest(ctx, d, req, false)
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
