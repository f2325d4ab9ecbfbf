package requesttrace

import (
	"bytes"
	"encoding/json"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/schemas"
)

// Workflow is the workflow type and id a Dynamo agent session takes in
// hintstream's agent identity (schemas.AgentContext). Dynamo's request
// trace names a session only (agent_context.session_id, and its parent's
// for a subagent), so every session is one program of this one workflow:
// the agent tracker keys it Workflow + "/" + session_id.
const Workflow = "dynamo"

// AgentIdentity is the agent identity of a Dynamo session, the same for
// its requests, responses and tool records.
func AgentIdentity(session, parent string) *schemas.AgentContext {
	if session == "" {
		return nil
	}
	return &schemas.AgentContext{WorkflowTypeID: Workflow, WorkflowID: Workflow, ProgramID: session,
		ParentProgramID: parent}
}

func (r *Record) identity() *schemas.AgentContext {
	if r.AgentContext == nil {
		return nil
	}
	return AgentIdentity(r.AgentContext.SessionID, r.AgentContext.ParentSessionID)
}

func (r *Record) nvext() *schemas.NvExt {
	if c := r.identity(); c != nil {
		return &schemas.NvExt{AgentContext: c}
	}
	return nil
}

// WorkerID is the worker that served the request and holds its KV
// afterwards: the decode worker, or the prefill worker when the record
// names no decode worker. ok is false when it names neither.
func (m *Metrics) WorkerID() (id uint64, dpRank uint32, ok bool) {
	if m == nil || m.Worker == nil {
		return 0, 0, false
	}
	w := m.Worker
	switch {
	case w.DecodeWorkerID != nil:
		id, ok = *w.DecodeWorkerID, true
		if w.DecodeDpRank != nil {
			dpRank = *w.DecodeDpRank
		}
	case w.PrefillWorkerID != nil:
		id, ok = *w.PrefillWorkerID, true
		if w.PrefillDpRank != nil {
			dpRank = *w.PrefillDpRank
		}
	}
	return id, dpRank, ok
}

// ToolNames are the names of the response's tool calls (those Dynamo
// could name), in order.
func (f *FinishReasonMetadata) ToolNames() []string {
	if f == nil {
		return nil
	}
	var names []string
	for _, tc := range f.ToolCalls {
		if tc.Name != "" {
			names = append(names, tc.Name)
		}
	}
	return names
}

// FinishReason is the response's finish reason: finish_reason_metadata's,
// or "tool_calls" when it names tool calls but no reason.
func (m *Metrics) FinishReason() string {
	if m == nil || m.Finish == nil {
		return ""
	}
	if m.Finish.FinishReason == "" && len(m.Finish.ToolCalls) > 0 {
		return "tool_calls"
	}
	return m.Finish.FinishReason
}

// Response is a request_end record as the response event hintstream's
// frontends publish (schemas.ResponseEvent), nil for other records: the
// request, its session, model, serving worker and rank, finish reason and
// tool calls, completed at the record's time (Dynamo emits request_end
// when the response ends). The response's output tokens are not in the
// record.
func (r *Record) Response() *schemas.ResponseEvent {
	if r.EventType != RequestEnd || r.Request == nil {
		return nil
	}
	m := r.Request
	resp := &schemas.ResponseEvent{RequestID: m.RequestID, SessionID: r.Session(), Model: m.Model,
		FinishReason: m.FinishReason(), CompletedAtMs: clampMs(r.EventTimeUnixMs), NvExt: r.nvext()}
	resp.WorkerID, resp.DpRank, _ = m.WorkerID()
	for _, name := range m.Finish.ToolNames() {
		resp.ToolCalls = append(resp.ToolCalls, schemas.ToolCall{Name: name})
	}
	return resp
}

// RequestEvent is a request_end record's request, as far as the record
// tells it: id, session, model, agent identity and the time Dynamo
// received it. It carries no token ids; the prompt is known by its
// sequence hashes (Replay.Full). payload, when given, adds its captured
// headers.
func (r *Record) RequestEvent(payload *Payload) *schemas.RequestEvent {
	if r.EventType != RequestEnd || r.Request == nil {
		return nil
	}
	m := r.Request
	req := &schemas.RequestEvent{RequestID: m.RequestID, SessionID: r.Session(), Model: m.Model, NvExt: r.nvext()}
	if m.RequestReceivedMs != nil {
		req.ReceivedAtMs = clampMs(*m.RequestReceivedMs)
	}
	if payload != nil && payload.RequestID == m.RequestID && len(payload.Headers) > 0 {
		req.Headers = payload.Headers
	}
	return req
}

// AgentRecord is a tool record as the agent tracker reads a harness's
// (agentevents.Record), nil for other records: Dynamo relays the
// harness's tool events (request_trace/tool_relay.rs), so they are one
// kind of event whichever path brought them.
func (r *Record) AgentRecord() *agentevents.Record {
	if !r.IsTool() || r.Tool == nil {
		return nil
	}
	c := r.identity()
	if c == nil {
		return nil
	}
	t := r.Tool
	return &agentevents.Record{Schema: agentevents.SchemaV1, EventType: r.EventType, EventTimeUnixMs: r.EventTimeUnixMs,
		EventSource: SourceHarness, AgentContext: *c, Tool: agentevents.Tool{ToolCallID: t.ToolCallID,
			ToolClass: t.ToolClass, Status: t.Status, DurationMs: t.DurationMs, HasDuration: t.HasDuration,
			StartedAtUnixMs: t.StartedAtUnixMs, EndedAtUnixMs: t.EndedAtUnixMs, OutputTokens: t.OutputTokens,
			OutputBytes: t.OutputBytes, ToolNameHash: t.ToolNameHash, ErrorType: t.ErrorType}}
}

func clampMs(ms uint64) int64 {
	if ms > 1<<62 {
		return 1 << 62
	}
	return int64(ms)
}

// Message is one chat message of a payload's request, as far as
// hintstream reads it.
type Message struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Messages returns the chat messages of the payload's request (nil when
// it carries none or they do not decode: the payload is optional and
// never stops a record).
func (p *Payload) Messages() []Message {
	if p == nil || len(p.Request) == 0 {
		return nil
	}
	var body struct {
		Messages []Message `json:"messages"`
	}
	d := json.NewDecoder(bytes.NewReader(p.Request))
	if d.Decode(&body) != nil {
		return nil
	}
	return body.Messages
}

// Trigger is what the payload's last message says started the request:
// TriggerToolResult after a tool message, TriggerUserMessage after a
// user's, "" otherwise. Dynamo derives input_trigger the same way, from
// the inbound request; this serves records from a Dynamo that sets none.
func (p *Payload) Trigger() string {
	msgs := p.Messages()
	if len(msgs) == 0 {
		return ""
	}
	switch msgs[len(msgs)-1].Role {
	case "tool", "function":
		return TriggerToolResult
	case "user":
		return TriggerUserMessage
	}
	return ""
}
