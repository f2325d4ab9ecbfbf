package dynamotrace

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
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
				ID: Ptr(t.RequestID + "-call-" + strconv.Itoa(i)), Name: Ptr(name)})
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

// SessionsConfig shapes Sessions' traffic.
type SessionsConfig struct {
	Sessions, Turns int    // sessions, and LLM calls in each
	BlockSize       int    // trace_block_size
	StartMs         uint64 // the first request's receipt time
	Model           string
	Workers         int // sessions are served round robin by workers 1..Workers
	// Payloads adds each turn's request_payload record.
	Payloads bool
}

// Sessions is the request trace of agent sessions as a Dynamo frontend
// with DYN_REQUEST_TRACE=1 and the tool relay writes it: each session's
// turns in order, every turn but the last ending in a tool call
// (finish_reason tool_calls, tool "search" or "run_tests" by turn),
// followed by the harness's tool_start and tool_end, and the next turn
// (input_trigger tool_result) extending the previous prompt with its
// output and the tool's result. Each prompt is 4.5 blocks plus 2 per turn
// (so its last block is partial). Records are in the order the sinks
// write them: by time.
func Sessions(c SessionsConfig) []*Record {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Model == "" {
		c.Model = "Qwen/Qwen3-8B"
	}
	type timed struct {
		at uint64
		r  *Record
	}
	var all []timed
	bs := c.BlockSize
	for s := range c.Sessions {
		session := "agent-" + strconv.Itoa(s)
		// A prefix of its own: equal tokens only within the session.
		prompt := make([]uint32, bs*9/2)
		for i := range prompt {
			prompt[i] = uint32(s*1_000_003 + i)
		}
		at := c.StartMs + uint64(s)*700
		for k := range c.Turns {
			tool := []string{"search", "run_tests"}[k%2]
			t := Turn{RequestID: session + "-turn-" + strconv.Itoa(k), Session: session, Model: c.Model,
				Prompt: append([]uint32(nil), prompt...), BlockSize: bs, Worker: uint64(s%c.Workers + 1),
				ReceivedMs: at, TotalMs: 400, OutputTokens: uint64(bs)}
			if k == 0 {
				t.Trigger = "user_message"
			} else {
				t.Trigger = "tool_result"
			}
			last := k == c.Turns-1
			if last {
				t.FinishReason = "stop"
			} else {
				t.FinishReason, t.ToolCalls = "tool_calls", []string{tool}
			}
			end := at + 400
			all = append(all, timed{end, t.RequestEnd()})
			if c.Payloads {
				all = append(all, timed{end, t.RequestPayload([]byte(`[{"role":"user","content":"go"}]`),
					map[string]string{"x-request-id": t.RequestID})})
			}
			if last {
				break
			}
			call := t.RequestID + "-call"
			toolStart, toolEnd := end+50, end+50+uint64(1000+500*(k%2))
			all = append(all, timed{toolStart, Tool("tool_start", session, call, tool, toolStart, 0)},
				timed{toolEnd, Tool("tool_end", session, call, tool, toolStart, toolEnd)})
			// The next prompt: this one, its output, the tool's result.
			for i := range 2 * bs {
				prompt = append(prompt, uint32(s*1_000_003+500_000+k*4*bs+i))
			}
			at = toolEnd + 20
		}
	}
	// The sinks write records as they are emitted.
	slices.SortStableFunc(all, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
	out := make([]*Record, len(all))
	for i, t := range all {
		out[i] = t.r
	}
	return out
}

// EveryField is a request_end record with every optional field set (its
// payload aside): the widest record Dynamo writes, for decoders' tests.
func EveryField() *Record {
	return &Record{Schema: "dynamo.request.trace.v1", EventType: "request_end", EventTimeUnixMs: 9, EventSource: Ptr("dynamo"),
		AgentContext: &AgentContext{SessionID: "s", ParentSessionID: Ptr("p"), SessionFinal: Ptr(false),
			Compaction: &AgentCompaction{Trigger: Ptr("auto"), Reason: Ptr("r"), Implementation: Ptr("i"), Phase: Ptr("ph"), Strategy: Ptr("st")},
			KVHints:    &KVHints{EvictSession: true}, InputTrigger: Ptr("tool_result")},
		Request: &Metrics{RequestID: "q", XRequestID: Ptr("x"), Model: Ptr("m"), InputTokens: Ptr(uint64(1)),
			OutputTokens: Ptr(uint64(2)), CachedTokens: Ptr(uint64(3)), RequestReceivedMs: Ptr(uint64(4)),
			PrefillWaitTimeMs: Ptr(F64(0.5)), PrefillTimeMs: Ptr(F64(1)), TTFTMs: Ptr(F64(2)), TotalTimeMs: Ptr(F64(3)),
			AvgITLMs: Ptr(F64(4)), KVHitRate: Ptr(F64(0.25)), KVTransferEstimatedLatencyMs: Ptr(F64(6)), QueueDepth: Ptr(uint64(7)),
			Worker: &WorkerInfo{PrefillWorkerID: Ptr(uint64(10)), PrefillDpRank: Ptr(uint32(1)), DecodeWorkerID: Ptr(uint64(11)),
				DecodeDpRank: Ptr(uint32(2))},
			Replay: &ReplayMetrics{TraceBlockSize: 2, InputLength: 3, InputSequenceHashes: []uint64{18446744073709551615, 1},
				KVHints: RawJSON(`{"a":1}`)},
			FinishReasonMetadata: &FinishReasonMetadata{FinishReason: Ptr("tool_calls"), BackendFinishReason: Ptr("stop"),
				StopReason: RawJSON(`"eos"`), ToolCalls: []ToolCallMetadata{{ChoiceIndex: 0, ToolCallIndex: 1, ID: Ptr("c"), Name: Ptr("n")}},
				Choices: []ChoiceFinishReasonMetadata{{ChoiceIndex: 0, FinishReason: Ptr("tool_calls"), BackendFinishReason: Ptr("stop"),
					StopReason: RawJSON(`7`)}}}}}
}
