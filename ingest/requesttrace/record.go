package requesttrace

import (
	"encoding/json"
)

// Schema is the only schema Dynamo defines (RequestTraceSchema::V1).
const Schema = "dynamo.request.trace.v1"

// Event types (RequestTraceEventType).
const (
	RequestEnd     = "request_end"
	RequestPayload = "request_payload"
	ToolStart      = "tool_start"
	ToolEnd        = "tool_end"
	ToolError      = "tool_error"
)

// Event sources (RequestTraceEventSource).
const (
	SourceDynamo  = "dynamo"
	SourceHarness = "harness"
)

// Input triggers (InputTrigger, snake_case).
const (
	TriggerUserMessage = "user_message"
	TriggerToolResult  = "tool_result"
	TriggerOther       = "other"
)

// Record is one decoded request-trace record. Exactly one of Request,
// Tool and Payload is set, as EventType says: Request for request_end,
// Tool for the tool events, Payload for request_payload.
type Record struct {
	Schema          string
	EventType       string
	EventTimeUnixMs uint64
	EventSource     string // "" when absent
	// AgentContext is nil when the request named no agent session.
	AgentContext *AgentContext
	Request      *Metrics
	Tool         *Tool
	Payload      *Payload
}

// AgentContext is Dynamo's agent identity of the request.
type AgentContext struct {
	SessionID       string
	ParentSessionID string
	SessionFinal    *bool
	InputTrigger    string // "" when absent
	EvictSession    bool   // kv_hints.evict_session
}

// Metrics is a request_end record's request: what Dynamo measured.
// Absent optional numbers are nil.
type Metrics struct {
	RequestID                    string
	XRequestID                   string
	Model                        string
	InputTokens                  *uint64
	OutputTokens                 *uint64
	CachedTokens                 *uint64
	RequestReceivedMs            *uint64
	PrefillWaitTimeMs            *float64
	PrefillTimeMs                *float64
	TTFTMs                       *float64
	TotalTimeMs                  *float64
	AvgITLMs                     *float64
	KVHitRate                    *float64
	KVTransferEstimatedLatencyMs *float64
	QueueDepth                   *uint64
	Worker                       *Worker
	Replay                       *Replay
	Finish                       *FinishReasonMetadata
}

// Worker names the workers that served a request.
type Worker struct {
	PrefillWorkerID *uint64
	PrefillDpRank   *uint32
	DecodeWorkerID  *uint64
	DecodeDpRank    *uint32
}

// Replay is the prompt's shape: its length and its sequence hashes.
type Replay struct {
	TraceBlockSize uint64
	InputLength    uint64
	// Hashes are input_sequence_hashes as sent, the partial tail included.
	Hashes []uint64
	// KVHints is replay.kv_hints, raw (nil when absent).
	KVHints json.RawMessage
}

// FullBlocks is the number of the prompt's blocks that are full.
func (r *Replay) FullBlocks() int {
	if r == nil || r.TraceBlockSize == 0 {
		return 0
	}
	return int(min(uint64(len(r.Hashes)), r.InputLength/r.TraceBlockSize))
}

// Full returns the sequence hashes of the prompt's full blocks: the
// partial tail's, which no KV event names, dropped (see the package doc).
func (r *Replay) Full() []uint64 {
	if r == nil {
		return nil
	}
	return r.Hashes[:r.FullBlocks()]
}

// HasPartialTail reports that the last hash is a partial block's.
func (r *Replay) HasPartialTail() bool { return r != nil && r.FullBlocks() < len(r.Hashes) }

// FinishReasonMetadata is how the response finished.
type FinishReasonMetadata struct {
	FinishReason        string // "" when absent
	BackendFinishReason string
	StopReason          json.RawMessage // raw: a string or a token id
	ToolCalls           []ToolCallMetadata
	Choices             []ChoiceFinish
}

// ToolCallMetadata is one complete tool call of the response, by name.
type ToolCallMetadata struct {
	ChoiceIndex   uint32
	ToolCallIndex uint32
	ID            string
	Name          string
}

// ChoiceFinish is one choice's finish, for multi-choice requests.
type ChoiceFinish struct {
	ChoiceIndex         uint32
	FinishReason        string
	BackendFinishReason string
}

// Tool is a tool event's tool. Absent optional numbers are 0; Has*
// tell where 0 is a value.
type Tool struct {
	ToolCallID      string
	ToolClass       string
	StartedAtUnixMs uint64
	EndedAtUnixMs   uint64
	Status          string // normalised (agentevents.StatusRunning, ...) or ""
	DurationMs      float64
	HasDuration     bool
	OutputTokens    uint64
	OutputBytes     uint64
	ToolNameHash    string
	ErrorType       string
}

// Payload is a request_payload record's payload: the OpenAI request and
// response bodies (raw JSON objects, nil when absent) and the allow-listed
// HTTP request headers (DYN_REQUEST_TRACE_HTTP_HEADER_CAPTURE_LIST).
type Payload struct {
	RequestID         string
	Endpoint          string
	Model             string
	Request           json.RawMessage
	Response          json.RawMessage
	Headers           map[string]string
	Complete          bool
	PayloadDropReason string
}

// Session is the record's agent session id, "" without one.
func (r *Record) Session() string {
	if r.AgentContext == nil {
		return ""
	}
	return r.AgentContext.SessionID
}

// Trigger is the record's input trigger, "" when not given.
func (r *Record) Trigger() string {
	if r.AgentContext == nil {
		return ""
	}
	return r.AgentContext.InputTrigger
}

// IsTool reports a tool event.
func (r *Record) IsTool() bool {
	return r.EventType == ToolStart || r.EventType == ToolEnd || r.EventType == ToolError
}
