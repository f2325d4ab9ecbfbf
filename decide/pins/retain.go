package pins

import (
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
)

// RetainClaim is the claim a session's KV is kept under on a worker:
// "hintstream/<session>", the namespacing vLLM asks of producers
// (vllm/v1/kv_hints/README.md at 7966f717dd4eb09461dd97102db1352c924bbf50)
// and the claim `hintstream adapter` gives a session's prefetch, so a
// tool-call retain and the next wake-up's prefetch replace each other.
func RetainClaim(session, requestID string) string {
	if session == "" {
		return "hintstream/request:" + requestID
	}
	return "hintstream/" + session
}

// retainOnWorker sends the worker that served a tool-call turn a
// hintstream.retain@1.0 for the turn's tokens (prompt and response): its adapter
// keeps them in the engine's own cache for the pin's TTL, which is what
// a cluster without a Mooncake master has. Fire and forget: the
// response's acknowledgement waits on the pin, not on this.
func (p *Pinning) retainOnWorker(req *schemas.RequestEvent, resp *schemas.ResponseEvent, w schemas.WorkerRecord,
	tokens []uint32, simToolMs int64) {
	if !p.RetainOnWorker || len(tokens) == 0 {
		return
	}
	if int(resp.DpRank) >= len(w.HintEndpoints) {
		p.Counters.HintsRetainDropped.Inc("no_endpoint")
		return
	}
	expected := time.Duration(simToolMs) * time.Millisecond
	if simToolMs <= 1 {
		tools := make([]string, 0, len(resp.ToolCalls))
		for _, tc := range resp.ToolCalls {
			tools = append(tools, tc.Name)
		}
		expected, _ = p.Learner.Expected(tools)
	}
	ttl := p.TTL.TTL(expected)
	session := req.SessionID
	if session == "" {
		session = resp.SessionID
	}
	now := p.now()
	deadline := now.Add(p.TTL.Deadline(ttl))
	model := req.Model
	if model == "" {
		model = resp.Model
	}
	body, id, err := actions.EncodeRetain(actions.Retain{Trigger: resp.RequestID, SessionID: session, Model: model,
		TokenIDs: tokens, DpRank: resp.DpRank, TTL: ttl, Priority: actions.Priority(len(tokens)),
		ClaimID: RetainClaim(session, resp.RequestID), Revision: now.UnixMilli(), ExpiresAt: deadline})
	if err != nil {
		p.Counters.HintsRetainDropped.Inc("encode")
		p.Log.Warn("encode retain", "trigger", resp.RequestID, "err", err)
		return
	}
	ep := w.HintEndpoints[resp.DpRank]
	if err := p.Sender.Send(ep, actions.Hint{MessageID: id, Body: body, Deadline: deadline}); err != nil {
		p.Counters.HintsRetainDropped.Inc(actions.DropReason(err))
		p.Log.Warn("retain not queued", "trigger", resp.RequestID, "endpoint", ep, "err", err)
		return
	}
	p.Counters.HintsRetainQueued.Inc()
	p.Log.Debug("retain queued", "trigger", resp.RequestID, "endpoint", ep, "ttl", ttl, "tokens", len(tokens))
}
