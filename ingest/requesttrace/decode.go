package requesttrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/schemas"
)

// Kind is the DecodeError kind of a request-trace record.
const Kind = "request_trace"

// Limits bound a record. Zero fields take DefaultLimits'.
type Limits struct {
	// MaxBytes bounds one record (a line of a file, a NATS message).
	MaxBytes int
	// MaxHashes bounds replay.input_sequence_hashes: a prompt of more
	// blocks is refused before its hashes are kept.
	MaxHashes int
	// MaxString bounds each id, name and header value.
	MaxString int
	// MaxHeaders bounds payload.http_request_headers.
	MaxHeaders int
	// MaxDepth bounds the nesting of JSON containers (the OpenAI bodies
	// of a payload are the deepest).
	MaxDepth int
}

// Defaults of Limits.
const (
	// DefaultMaxBytes: a request_payload carries whole OpenAI bodies; a
	// long agent context is megabytes of text.
	DefaultMaxBytes = 16 << 20
	// DefaultMaxHashes: a 1M-token prompt at 16-token blocks.
	DefaultMaxHashes = 1 << 16
	// DefaultMaxString bounds ids and names (as schemas.DefaultMaxAgentID)
	// and header values.
	DefaultMaxString = 8 << 10
	// DefaultMaxHeaders as schemas.DefaultLimits.
	DefaultMaxHeaders = 256
	// DefaultMaxDepth: the record nests 4 deep, its OpenAI bodies about
	// 8 (messages, content parts, tool calls, JSON-schema parameters).
	DefaultMaxDepth = 64
)

// DefaultLimits returns the limits used for zero fields.
func DefaultLimits() Limits {
	return Limits{MaxBytes: DefaultMaxBytes, MaxHashes: DefaultMaxHashes, MaxString: DefaultMaxString,
		MaxHeaders: DefaultMaxHeaders, MaxDepth: DefaultMaxDepth}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxHashes <= 0 {
		l.MaxHashes = d.MaxHashes
	}
	if l.MaxString <= 0 {
		l.MaxString = d.MaxString
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = d.MaxHeaders
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}

// Decode decodes one record within DefaultLimits.
func Decode(data []byte) (*Record, error) { return Limits{}.Decode(data) }

// Reasons Decode gives (besides the per-field "missing X", "wrong type
// for X" and "X too long" families).
const (
	ReasonTooLarge       = "record too large"
	ReasonInvalidUTF8    = "invalid UTF-8"
	ReasonInvalidJSON    = "invalid JSON"
	ReasonNotObject      = "record is not an object"
	ReasonTooDeep        = "JSON nested too deeply"
	ReasonSchema         = "unsupported schema"
	ReasonEventType      = "unknown event_type"
	ReasonToolStatus     = "unknown tool status"
	ReasonTooManyHashes  = "too many sequence hashes"
	ReasonBlockSize      = "trace_block_size is 0"
	ReasonHashesPastEnd  = "more sequence hashes than prompt blocks"
	ReasonDuration       = "duration_ms not a finite non-negative number"
	ReasonEmptyTool      = "empty tool_call_id or tool_class"
	ReasonEmptySession   = "empty session_id"
	ReasonEmptyRequestID = "empty request_id"
	ReasonTooManyHeaders = "too many headers"
	ReasonBodyNotObject  = "payload body is not an object"
	// ReasonUnknownWorker is not Decode's: a consumer gives it to a
	// request_end whose worker its registry does not know.
	ReasonUnknownWorker = "unknown worker"
)

// AllReasons are the reasons Decode gives, the per-field families spelt
// out for the fields that have them, for counters listed at 0 from
// start-up.
func AllReasons() []string {
	r := []string{ReasonTooLarge, ReasonInvalidUTF8, ReasonInvalidJSON, ReasonNotObject, ReasonTooDeep,
		ReasonSchema, ReasonEventType, ReasonToolStatus, ReasonTooManyHashes,
		ReasonBlockSize, ReasonHashesPastEnd, ReasonDuration, ReasonEmptyTool, ReasonEmptySession,
		ReasonEmptyRequestID, ReasonTooManyHeaders, ReasonBodyNotObject, ReasonUnknownWorker}
	for _, f := range []string{"schema", "event_type", "event_time_unix_ms", "request", "tool", "payload",
		"agent_context", "request_id", "tool_call_id", "tool_class", "session_id", "trace_block_size",
		"input_length", "input_sequence_hashes", "endpoint", "model", "payload_complete"} {
		r = append(r, "missing "+f)
	}
	return r
}

func bad(reason string, err error) error {
	return &schemas.DecodeError{Kind: Kind, Reason: reason, Err: err}
}

// The wire form: pointers tell an absent or null member from a zero one.
type wireRecord struct {
	Schema          *string      `json:"schema"`
	EventType       *string      `json:"event_type"`
	EventTimeUnixMs *uint64      `json:"event_time_unix_ms"`
	EventSource     *string      `json:"event_source"`
	AgentContext    *wireAgent   `json:"agent_context"`
	Request         *wireMetrics `json:"request"`
	Tool            *wireTool    `json:"tool"`
	Payload         *wirePayload `json:"payload"`
}

type wireAgent struct {
	SessionID       *string `json:"session_id"`
	ParentSessionID *string `json:"parent_session_id"`
	SessionFinal    *bool   `json:"session_final"`
	KVHints         *struct {
		EvictSession *bool `json:"evict_session"`
	} `json:"kv_hints"`
	InputTrigger *string `json:"input_trigger"`
}

type wireMetrics struct {
	RequestID                    *string     `json:"request_id"`
	XRequestID                   *string     `json:"x_request_id"`
	Model                        *string     `json:"model"`
	InputTokens                  *uint64     `json:"input_tokens"`
	OutputTokens                 *uint64     `json:"output_tokens"`
	CachedTokens                 *uint64     `json:"cached_tokens"`
	RequestReceivedMs            *uint64     `json:"request_received_ms"`
	PrefillWaitTimeMs            *float64    `json:"prefill_wait_time_ms"`
	PrefillTimeMs                *float64    `json:"prefill_time_ms"`
	TTFTMs                       *float64    `json:"ttft_ms"`
	TotalTimeMs                  *float64    `json:"total_time_ms"`
	AvgITLMs                     *float64    `json:"avg_itl_ms"`
	KVHitRate                    *float64    `json:"kv_hit_rate"`
	KVTransferEstimatedLatencyMs *float64    `json:"kv_transfer_estimated_latency_ms"`
	QueueDepth                   *uint64     `json:"queue_depth"`
	WireWorker                   *wireWorker `json:"worker"`
	Replay                       *wireReplay `json:"replay"`
	Finish                       *wireFinish `json:"finish_reason_metadata"`
}

type wireWorker struct {
	PrefillWorkerID *uint64 `json:"prefill_worker_id"`
	PrefillDpRank   *uint32 `json:"prefill_dp_rank"`
	DecodeWorkerID  *uint64 `json:"decode_worker_id"`
	DecodeDpRank    *uint32 `json:"decode_dp_rank"`
}

type wireReplay struct {
	TraceBlockSize *uint64         `json:"trace_block_size"`
	InputLength    *uint64         `json:"input_length"`
	Hashes         inPlace         `json:"input_sequence_hashes"`
	KVHints        json.RawMessage `json:"kv_hints"`
}

type wireFinish struct {
	FinishReason        *string         `json:"finish_reason"`
	BackendFinishReason *string         `json:"backend_finish_reason"`
	StopReason          json.RawMessage `json:"stop_reason"`
	ToolCalls           []struct {
		ChoiceIndex   *uint32 `json:"choice_index"`
		ToolCallIndex *uint32 `json:"tool_call_index"`
		ID            *string `json:"id"`
		Name          *string `json:"name"`
	} `json:"tool_calls"`
	Choices []struct {
		ChoiceIndex         *uint32 `json:"choice_index"`
		FinishReason        *string `json:"finish_reason"`
		BackendFinishReason *string `json:"backend_finish_reason"`
	} `json:"choices"`
}

type wireTool struct {
	ToolCallID      *string  `json:"tool_call_id"`
	ToolClass       *string  `json:"tool_class"`
	StartedAtUnixMs *uint64  `json:"started_at_unix_ms"`
	EndedAtUnixMs   *uint64  `json:"ended_at_unix_ms"`
	Status          *string  `json:"status"`
	DurationMs      *float64 `json:"duration_ms"`
	OutputTokens    *uint64  `json:"output_tokens"`
	OutputBytes     *uint64  `json:"output_bytes"`
	ToolNameHash    *string  `json:"tool_name_hash"`
	ErrorType       *string  `json:"error_type"`
}

type wirePayload struct {
	RequestID         *string            `json:"request_id"`
	Endpoint          *string            `json:"endpoint"`
	Model             *string            `json:"model"`
	Request           json.RawMessage    `json:"request"`
	Response          json.RawMessage    `json:"response"`
	Headers           *map[string]string `json:"http_request_headers"`
	PayloadComplete   *bool              `json:"payload_complete"`
	PayloadDropReason *string            `json:"payload_drop_reason"`
}

// Decode decodes and checks one record (a bare record: see DecodeLine for
// a file's lines). Its errors are *schemas.DecodeError of Kind.
func (l Limits) Decode(data []byte) (*Record, error) {
	l = l.withDefaults()
	if len(data) > l.MaxBytes {
		return nil, bad(ReasonTooLarge, nil)
	}
	data = bytes.TrimSpace(data)
	if !utf8.Valid(data) {
		return nil, bad(ReasonInvalidUTF8, nil)
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, bad(ReasonNotObject, nil)
	}
	// The walk bounds the depth and rejects what is not one JSON value
	// before encoding/json allocates for it, and finds the hash list.
	hashes, reason := walk(data, l.MaxDepth)
	if reason != "" {
		return nil, bad(reason, nil)
	}
	// The hash list is most of a request_end's bytes, and encoding/json
	// scans what it decodes three times over (valid, skip, parse): it gets
	// the record without the list, which parseHashes reads once. Where the
	// walk did not find it (an escaped key), encoding/json meets it as it
	// meets any member.
	doc := data
	if hashes.end > hashes.start {
		doc = make([]byte, 0, len(data)-(hashes.end-hashes.start)+2)
		doc = append(append(append(doc, data[:hashes.start]...), "[]"...), data[hashes.end:]...)
	}
	var w wireRecord
	if err := json.Unmarshal(doc, &w); err != nil {
		return nil, jsonError(err)
	}
	if hashes.end > hashes.start && w.Request != nil && w.Request.Replay != nil {
		w.Request.Replay.Hashes = inPlace(data[hashes.start:hashes.end])
	}
	return l.fromWire(&w)
}

// jsonError names the member of a type error (its path, e.g.
// "request.replay.trace_block_size"), which is stable: only known
// members are typed.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return bad("wrong type for "+te.Field, err)
	}
	if errors.As(err, &te) {
		return bad(ReasonNotObject, err)
	}
	return bad(ReasonInvalidJSON, err)
}

func (l Limits) fromWire(w *wireRecord) (*Record, error) {
	var r Record
	var err error
	if r.Schema, err = l.required(w.Schema, "schema"); err != nil {
		return nil, err
	}
	if r.Schema != Schema {
		return nil, bad(ReasonSchema, nil)
	}
	if r.EventType, err = l.required(w.EventType, "event_type"); err != nil {
		return nil, err
	}
	switch r.EventType {
	case RequestEnd, RequestPayload, ToolStart, ToolEnd, ToolError:
	default:
		return nil, bad(ReasonEventType, nil)
	}
	if w.EventTimeUnixMs == nil {
		return nil, bad("missing event_time_unix_ms", nil)
	}
	r.EventTimeUnixMs = *w.EventTimeUnixMs
	// An event source or input trigger Dynamo adds later is kept as it
	// is: the record is still one of a request or a tool, and refusing
	// it would stop every record of a newer frontend.
	if r.EventSource, err = l.optional(w.EventSource, "event_source"); err != nil {
		return nil, err
	}
	if w.AgentContext != nil {
		if r.AgentContext, err = l.agent(w.AgentContext); err != nil {
			return nil, err
		}
	}
	switch {
	case r.EventType == RequestEnd:
		if w.Request == nil {
			return nil, bad("missing request", nil)
		}
		if r.Request, err = l.metrics(w.Request); err != nil {
			return nil, err
		}
	case r.EventType == RequestPayload:
		if w.Payload == nil {
			return nil, bad("missing payload", nil)
		}
		if r.Payload, err = l.payload(w.Payload); err != nil {
			return nil, err
		}
	default:
		if w.Tool == nil {
			return nil, bad("missing tool", nil)
		}
		// A tool record without a session cannot be placed in an agent's
		// turns; Dynamo's ingress always gives one (types.rs
		// RequestTraceToolEventIngress).
		if r.AgentContext == nil {
			return nil, bad("missing agent_context", nil)
		}
		if r.Tool, err = l.tool(w.Tool); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// required reads a required string member.
func (l Limits) required(s *string, name string) (string, error) {
	if s == nil {
		return "", bad("missing "+name, nil)
	}
	return l.optional(s, name)
}

// optional reads an optional string member ("" when absent).
func (l Limits) optional(s *string, name string) (string, error) {
	if s == nil {
		return "", nil
	}
	if len(*s) > l.MaxString {
		return "", bad(name+" too long", nil)
	}
	return *s, nil
}

func (l Limits) agent(w *wireAgent) (*AgentContext, error) {
	var a AgentContext
	var err error
	if a.SessionID, err = l.required(w.SessionID, "session_id"); err != nil {
		return nil, err
	}
	if a.SessionID == "" {
		return nil, bad(ReasonEmptySession, nil)
	}
	if a.ParentSessionID, err = l.optional(w.ParentSessionID, "parent_session_id"); err != nil {
		return nil, err
	}
	a.SessionFinal = w.SessionFinal
	if w.KVHints != nil && w.KVHints.EvictSession != nil {
		a.EvictSession = *w.KVHints.EvictSession
	}
	if a.InputTrigger, err = l.optional(w.InputTrigger, "input_trigger"); err != nil {
		return nil, err
	}
	return &a, nil
}

func (l Limits) metrics(w *wireMetrics) (*Metrics, error) {
	m := Metrics{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, CachedTokens: w.CachedTokens,
		RequestReceivedMs: w.RequestReceivedMs, PrefillWaitTimeMs: w.PrefillWaitTimeMs, PrefillTimeMs: w.PrefillTimeMs,
		TTFTMs: w.TTFTMs, TotalTimeMs: w.TotalTimeMs, AvgITLMs: w.AvgITLMs, KVHitRate: w.KVHitRate,
		KVTransferEstimatedLatencyMs: w.KVTransferEstimatedLatencyMs, QueueDepth: w.QueueDepth}
	var err error
	if m.RequestID, err = l.required(w.RequestID, "request_id"); err != nil {
		return nil, err
	}
	if m.RequestID == "" {
		return nil, bad(ReasonEmptyRequestID, nil)
	}
	if m.XRequestID, err = l.optional(w.XRequestID, "x_request_id"); err != nil {
		return nil, err
	}
	if m.Model, err = l.optional(w.Model, "model"); err != nil {
		return nil, err
	}
	if ww := w.WireWorker; ww != nil {
		m.Worker = &Worker{PrefillWorkerID: ww.PrefillWorkerID, PrefillDpRank: ww.PrefillDpRank,
			DecodeWorkerID: ww.DecodeWorkerID, DecodeDpRank: ww.DecodeDpRank}
	}
	if w.Replay != nil {
		if m.Replay, err = l.replay(w.Replay); err != nil {
			return nil, err
		}
	}
	if w.Finish != nil {
		if m.Finish, err = l.finish(w.Finish); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

func (l Limits) replay(w *wireReplay) (*Replay, error) {
	switch {
	case w.TraceBlockSize == nil:
		return nil, bad("missing trace_block_size", nil)
	case w.InputLength == nil:
		return nil, bad("missing input_length", nil)
	case isNull(json.RawMessage(w.Hashes)):
		return nil, bad("missing input_sequence_hashes", nil)
	case *w.TraceBlockSize == 0:
		// Dynamo emits no replay at block size 0 (replay.rs replay_metrics).
		return nil, bad(ReasonBlockSize, nil)
	}
	r := Replay{TraceBlockSize: *w.TraceBlockSize, InputLength: *w.InputLength}
	if !isNull(w.KVHints) {
		r.KVHints = w.KVHints
	}
	hashes, reason := parseHashes(w.Hashes, l.MaxHashes)
	if reason != "" {
		return nil, bad(reason, nil)
	}
	// Every block, the partial last one too, has one hash (replay.rs
	// input_sequence_hashes).
	blocks := r.InputLength / r.TraceBlockSize
	if r.InputLength%r.TraceBlockSize != 0 {
		blocks++
	}
	if uint64(len(hashes)) > blocks {
		return nil, bad(ReasonHashesPastEnd, nil)
	}
	r.Hashes = hashes
	return &r, nil
}

func (l Limits) finish(w *wireFinish) (*FinishReasonMetadata, error) {
	var f FinishReasonMetadata
	var err error
	if f.FinishReason, err = l.optional(w.FinishReason, "finish_reason"); err != nil {
		return nil, err
	}
	if f.BackendFinishReason, err = l.optional(w.BackendFinishReason, "backend_finish_reason"); err != nil {
		return nil, err
	}
	if !isNull(w.StopReason) {
		f.StopReason = w.StopReason
	}
	for _, tc := range w.ToolCalls {
		if tc.ChoiceIndex == nil {
			return nil, bad("missing choice_index", nil)
		}
		if tc.ToolCallIndex == nil {
			return nil, bad("missing tool_call_index", nil)
		}
		c := ToolCallMetadata{ChoiceIndex: *tc.ChoiceIndex, ToolCallIndex: *tc.ToolCallIndex}
		if c.ID, err = l.optional(tc.ID, "tool call id"); err != nil {
			return nil, err
		}
		if c.Name, err = l.optional(tc.Name, "tool call name"); err != nil {
			return nil, err
		}
		f.ToolCalls = append(f.ToolCalls, c)
	}
	for _, ch := range w.Choices {
		if ch.ChoiceIndex == nil {
			return nil, bad("missing choice_index", nil)
		}
		c := ChoiceFinish{ChoiceIndex: *ch.ChoiceIndex}
		if c.FinishReason, err = l.optional(ch.FinishReason, "finish_reason"); err != nil {
			return nil, err
		}
		if c.BackendFinishReason, err = l.optional(ch.BackendFinishReason, "backend_finish_reason"); err != nil {
			return nil, err
		}
		f.Choices = append(f.Choices, c)
	}
	return &f, nil
}

func (l Limits) tool(w *wireTool) (*Tool, error) {
	var t Tool
	var err error
	if t.ToolCallID, err = l.required(w.ToolCallID, "tool_call_id"); err != nil {
		return nil, err
	}
	if t.ToolClass, err = l.required(w.ToolClass, "tool_class"); err != nil {
		return nil, err
	}
	if t.ToolCallID == "" || t.ToolClass == "" {
		return nil, bad(ReasonEmptyTool, nil)
	}
	if w.Status != nil {
		var known bool
		if t.Status, known = agentevents.NormalStatus(*w.Status); !known {
			return nil, bad(ReasonToolStatus, nil)
		}
	}
	if w.DurationMs != nil {
		d := *w.DurationMs
		if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
			return nil, bad(ReasonDuration, nil)
		}
		t.DurationMs, t.HasDuration = d, true
	}
	for _, f := range []struct {
		src *uint64
		dst *uint64
	}{{w.StartedAtUnixMs, &t.StartedAtUnixMs}, {w.EndedAtUnixMs, &t.EndedAtUnixMs},
		{w.OutputTokens, &t.OutputTokens}, {w.OutputBytes, &t.OutputBytes}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if t.ToolNameHash, err = l.optional(w.ToolNameHash, "tool_name_hash"); err != nil {
		return nil, err
	}
	if t.ErrorType, err = l.optional(w.ErrorType, "error_type"); err != nil {
		return nil, err
	}
	return &t, nil
}

func (l Limits) payload(w *wirePayload) (*Payload, error) {
	var p Payload
	var err error
	if p.RequestID, err = l.required(w.RequestID, "request_id"); err != nil {
		return nil, err
	}
	if p.Endpoint, err = l.required(w.Endpoint, "endpoint"); err != nil {
		return nil, err
	}
	if p.Model, err = l.required(w.Model, "model"); err != nil {
		return nil, err
	}
	if w.PayloadComplete == nil {
		return nil, bad("missing payload_complete", nil)
	}
	p.Complete = *w.PayloadComplete
	if p.PayloadDropReason, err = l.optional(w.PayloadDropReason, "payload_drop_reason"); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		src json.RawMessage
		dst *json.RawMessage
	}{{w.Request, &p.Request}, {w.Response, &p.Response}} {
		switch {
		case isNull(b.src):
		case b.src[0] != '{':
			return nil, bad(ReasonBodyNotObject, nil)
		default:
			*b.dst = b.src
		}
	}
	if w.Headers != nil {
		if len(*w.Headers) > l.MaxHeaders {
			return nil, bad(ReasonTooManyHeaders, nil)
		}
		p.Headers = make(map[string]string, len(*w.Headers))
		for k, v := range *w.Headers {
			if len(k) > l.MaxString || len(v) > l.MaxString {
				return nil, bad("header too long", nil)
			}
			// HTTP header names are case-insensitive; hintstream's request
			// headers are lower-case (schemas.RequestEvent).
			p.Headers[strings.ToLower(k)] = v
		}
	}
	return &p, nil
}

// inPlace keeps a member's JSON as a slice of the record, not a copy (as
// json.RawMessage makes): the hash list is read from it within Decode,
// while the record's bytes are the caller's, so a megabyte list costs no
// megabyte copy.
type inPlace []byte

func (p *inPlace) UnmarshalJSON(b []byte) error {
	*p = b
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// parseHashes reads a JSON array of u64 without keeping more than max:
// the bound holds whatever the array's length on the wire.
func parseHashes(raw []byte, max int) ([]uint64, string) {
	const wrong = "wrong type for request.replay.input_sequence_hashes"
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, wrong
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return []uint64{}, ""
	}
	// One slice of the list's length (its commas, counted at memory
	// speed), never more than max.
	out := make([]uint64, 0, min(max, bytes.Count(raw, []byte{','})+1))
	for {
		start := i
		var v uint64
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			d := uint64(raw[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				return nil, wrong // past u64, as serde refuses it
			}
			v = v*10 + d
			i++
		}
		// JSON forbids leading zeros; a sign, fraction or exponent is not
		// a u64 to serde.
		if i == start || (raw[start] == '0' && i-start > 1) {
			return nil, wrong
		}
		if len(out) == max {
			return nil, ReasonTooManyHashes
		}
		out = append(out, v)
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, wrong
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return out, ""
		default:
			return nil, wrong
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// span is a value's bytes [start, end) in a record.
type span struct{ start, end int }

// hashPath is where the hash list is: request.replay.input_sequence_hashes.
var hashPath = [...]string{"request", "replay", "input_sequence_hashes"}

// walk walks data as JSON, outside strings, and returns a reason if its
// containers nest deeper than max or it is not one value; and the span
// of the array at hashPath, when its keys are written plainly (as serde
// writes them).
func walk(data []byte, max int) (span, string) {
	type frame struct {
		obj, expectKey bool
		key            []byte
	}
	var stack []frame
	var hashes span
	inString, escaped, strStart := false, false, 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expectKey {
					stack[n-1].key = data[strStart:i]
				}
			}
		case c == '"':
			inString, strStart = true, i+1
		case c == '{' || c == '[':
			if len(stack) >= max {
				return span{}, ReasonTooDeep
			}
			if c == '[' && len(stack) == len(hashPath) && onHashPath(len(stack), func(d int) ([]byte, bool) {
				return stack[d].key, stack[d].obj
			}) {
				hashes.start = i
				// A list of numbers (all a good one holds) is passed in a
				// tight loop; anything else is walked as the rest is.
				j := i + 1
				for j < len(data) && isNumberListByte(data[j]) {
					j++
				}
				if j < len(data) && data[j] == ']' {
					hashes.end = j + 1
					i = j
					continue
				}
			}
			stack = append(stack, frame{obj: c == '{', expectKey: c == '{'})
		case c == '}' || c == ']':
			if len(stack) == 0 {
				return span{}, ReasonInvalidJSON
			}
			if c == ']' && len(stack) == len(hashPath)+1 && hashes.start > 0 && hashes.end == 0 {
				hashes.end = i + 1
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 && len(bytes.TrimSpace(data[i+1:])) != 0 {
				return span{}, ReasonInvalidJSON
			}
		case c == ',':
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].expectKey = true
			}
		case c == ':':
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].expectKey = false
			}
		}
	}
	if hashes.end == 0 {
		hashes = span{}
	}
	return hashes, ""
}

func isNumberListByte(c byte) bool {
	return c >= '0' && c <= '9' || c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// onHashPath reports whether the containers above depth n (keys and
// kinds given by at) are hashPath's objects.
func onHashPath(n int, at func(d int) ([]byte, bool)) bool {
	for d := range n {
		key, obj := at(d)
		if !obj || string(key) != hashPath[d] {
			return false
		}
	}
	return true
}
