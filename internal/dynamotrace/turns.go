package dynamotrace

import (
	"encoding/json"
)

// Turn is one LLM call of an agent session, as a Dynamo frontend would
// trace it.
type Turn struct {
	RequestID string
	Session   string
	Parent    string // parent_session_id, "" for none
	Trigger   string // input_trigger: "user_message", "tool_result", "other" or ""
	Model     string
	Prompt    []uint32 // the prompt's tokens (Dynamo hashes them; they are not in the record)
	BlockSize int      // trace_block_size
	Worker    uint64
	DpRank    uint32
	// FinishReason is the final finish reason ("stop", "tool_calls", ...).
	FinishReason string
	ToolCalls    []string // tool names, in order
	ReceivedMs   uint64
	TotalMs      float64
	OutputTokens uint64
	CachedTokens uint64
}

// RequestEnd is the turn's request_end record as emit_agent_request_end
// writes it (record.rs@0366e63a): event_source dynamo, the agent context,
// every metric request_metrics fills, the replay hashes and the finish
// metadata. A Turn with no Session is emit_request_end's record instead:
// no source, no context, output tokens, receipt time and replay only.
func (t Turn) RequestEnd() *Record {
	replay := &ReplayMetrics{TraceBlockSize: uint64(t.BlockSize), InputLength: uint64(len(t.Prompt)),
		InputSequenceHashes: Hashes(t.Prompt, t.BlockSize)}
	if t.Session == "" {
		total := t.ReceivedMs + uint64(t.TotalMs+0.5)
		return &Record{Schema: "dynamo.request.trace.v1", EventType: "request_end", EventTimeUnixMs: total,
			Request: &Metrics{RequestID: t.RequestID, OutputTokens: Ptr(t.OutputTokens),
				RequestReceivedMs: Ptr(t.ReceivedMs), Replay: replay}}
	}
	ac := &AgentContext{SessionID: t.Session}
	if t.Parent != "" {
		ac.ParentSessionID = Ptr(t.Parent)
	}
	if t.Trigger != "" {
		ac.InputTrigger = Ptr(t.Trigger)
	}
	m := &Metrics{RequestID: t.RequestID, Model: Ptr(t.Model), InputTokens: Ptr(uint64(len(t.Prompt))),
		OutputTokens: Ptr(t.OutputTokens), CachedTokens: Ptr(t.CachedTokens), RequestReceivedMs: Ptr(t.ReceivedMs),
		PrefillWaitTimeMs: Ptr(F64(1.5)), PrefillTimeMs: Ptr(F64(t.TotalMs / 4)), TTFTMs: Ptr(F64(t.TotalMs / 4)),
		TotalTimeMs: Ptr(F64(t.TotalMs)), AvgITLMs: Ptr(F64(12)), QueueDepth: Ptr(uint64(0)),
		Worker: &WorkerInfo{DecodeWorkerID: Ptr(t.Worker), DecodeDpRank: Ptr(t.DpRank)}, Replay: replay}
	if len(t.Prompt) > 0 {
		m.KVHitRate = Ptr(F64(float64(t.CachedTokens) / float64(len(t.Prompt))))
	}
	if t.FinishReason != "" || len(t.ToolCalls) > 0 {
		f := &FinishReasonMetadata{BackendFinishReason: Ptr("stop")}
		if t.FinishReason != "" {
			f.FinishReason = Ptr(t.FinishReason)
			f.Choices = []ChoiceFinishReasonMetadata{{ChoiceIndex: 0, FinishReason: Ptr(t.FinishReason),
				BackendFinishReason: Ptr("stop")}}
		}
		for i, name := range t.ToolCalls {
			f.ToolCalls = append(f.ToolCalls, ToolCallMetadata{ChoiceIndex: 0, ToolCallIndex: uint32(i),
				ID: Ptr(t.RequestID + "-call-" + string(rune('a'+i%26))), Name: Ptr(name)})
		}
		m.FinishReasonMetadata = f
	}
	return &Record{Schema: "dynamo.request.trace.v1", EventType: "request_end",
		EventTimeUnixMs: t.ReceivedMs + uint64(t.TotalMs+0.5), EventSource: Ptr("dynamo"), AgentContext: ac, Request: m}
}

// RequestPayload is the turn's request_payload record as
// emit_request_payload writes it: no agent context, the OpenAI bodies
// (messages given as JSON) and the captured headers.
func (t Turn) RequestPayload(messages json.RawMessage, headers map[string]string) *Record {
	req, _ := json.Marshal(map[string]any{"model": t.Model, "messages": messages})
	p := &Payload{RequestID: t.RequestID, Endpoint: "openai.chat_completion", Model: t.Model, Request: req,
		PayloadComplete: true}
	if headers != nil {
		p.HTTPRequestHeaders = &headers
	}
	return &Record{Schema: "dynamo.request.trace.v1", EventType: "request_payload",
		EventTimeUnixMs: t.ReceivedMs + uint64(t.TotalMs+0.5), EventSource: Ptr("dynamo"), Payload: p}
}

// Tool is a harness's tool record as Dynamo relays it
// (RequestTraceToolEventIngress into RequestTraceRecord: event_source
// harness, the session as agent context). eventType is tool_start,
// tool_end or tool_error; endMs 0 leaves the end and duration out.
func Tool(eventType, session, callID, class string, startMs, endMs uint64) *Record {
	t := &ToolEvent{ToolCallID: callID, ToolClass: class, StartedAtUnixMs: Ptr(startMs)}
	at := startMs
	switch eventType {
	case "tool_start":
		t.Status = Ptr("running")
	case "tool_end":
		t.Status = Ptr("succeeded")
	case "tool_error":
		t.Status, t.ErrorType = Ptr("error"), Ptr("timeout")
	}
	if endMs != 0 {
		t.EndedAtUnixMs, t.DurationMs, at = Ptr(endMs), Ptr(F64(float64(endMs-startMs))), endMs
		t.OutputBytes = Ptr(uint64(512))
	}
	return &Record{Schema: "dynamo.request.trace.v1", EventType: eventType, EventTimeUnixMs: at,
		EventSource: Ptr("harness"), AgentContext: &AgentContext{SessionID: session}, Tool: t}
}
