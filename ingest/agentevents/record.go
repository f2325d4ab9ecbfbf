package agentevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// Event types of tool records.
const (
	ToolStart = "tool_start"
	ToolEnd   = "tool_end"
	ToolError = "tool_error"
)

// SchemaV1 is the only schema Dynamo defines (TraceSchema::V1).
const SchemaV1 = "dynamo.agent.trace.v1"

// Tool statuses after Dynamo's serde aliases (AgentToolStatus).
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusError     = "error"
	StatusCancelled = "cancelled"
)

var statusAliases = map[string]string{
	"running": StatusRunning, "succeeded": StatusSucceeded, "ok": StatusSucceeded, "success": StatusSucceeded,
	"error": StatusError, "failed": StatusError, "cancelled": StatusCancelled, "timeout": StatusCancelled,
	"canceled": StatusCancelled,
}

// NormalStatus returns a tool status after serde's aliases, and whether
// Dynamo knows it: the request trace's RequestTraceToolStatus has the
// same variants and aliases as AgentToolStatus.
func NormalStatus(s string) (string, bool) {
	v, ok := statusAliases[s]
	return v, ok
}

// Bounds of a record.
const (
	// MaxRecordBytes bounds one record; Dynamo's are a few hundred bytes.
	MaxRecordBytes = 64 << 10
	// MaxString bounds every string but the agent ids
	// (schemas.DefaultMaxAgentID bounds those).
	MaxString = 1024
	// maxRecordDepth bounds a record's nesting; Dynamo's nest 2 deep.
	maxRecordDepth = 8
)

// Kind is the DecodeError kind of a tool record.
const Kind = "agent_event"

// Record is one tool lifecycle record.
type Record struct {
	Schema          string
	EventType       string
	EventTimeUnixMs uint64
	EventSource     string
	AgentContext    schemas.AgentContext
	Tool            Tool
}

// Tool is a record's tool payload; absent optional numbers are 0 (Has*
// tell).
type Tool struct {
	ToolCallID      string
	ToolClass       string
	Status          string // normalised: StatusRunning, ... or ""
	DurationMs      float64
	HasDuration     bool
	StartedAtUnixMs uint64
	EndedAtUnixMs   uint64
	OutputTokens    uint64
	OutputBytes     uint64
	ToolNameHash    string
	ErrorType       string
}

// Session is the session id of the record's program, as a request event
// carrying the same agent_context gets it (schemas.AgentSession).
func (r *Record) Session() string { return schemas.AgentSession(&r.AgentContext) }

// Terminal reports a tool_end or tool_error.
func (r *Record) Terminal() bool { return r.EventType == ToolEnd || r.EventType == ToolError }

// Decode decodes and checks one record, msgpack (the harness wire) or
// JSON (for the nats CLI), told apart as schemas.DetectFormat does. Its
// errors are *schemas.DecodeError of Kind.
func Decode(data []byte, contentType string) (*Record, error) {
	if len(data) > MaxRecordBytes {
		return nil, bad("record too large", nil)
	}
	f, ok := schemas.DetectFormat(contentType, data)
	if !ok {
		return nil, bad("neither JSON nor a msgpack map", nil)
	}
	fromJSON := f == schemas.FormatJSON
	if fromJSON {
		var err error
		if data, err = jsonToMsgpack(data); err != nil {
			return nil, err
		}
	} else {
		data = bytes.TrimLeft(data, " \t\r\n")
		// msgp.Skip, which the generated decoder runs on unknown members,
		// recurses; the bounded walk checks nesting and claims first.
		rest, err := schemas.SkipMsgpack(data, maxRecordDepth)
		switch {
		case errors.Is(err, schemas.ErrMsgpackTooDeep):
			return nil, bad(err.Error(), nil)
		case err != nil:
			return nil, bad("invalid msgpack", err)
		case len(rest) != 0:
			return nil, bad("trailing bytes after msgpack", nil)
		}
	}
	if !schemas.IsMsgpackMap(data[0]) {
		return nil, bad("record is not a map", nil)
	}
	var w wireRecord
	_, err := w.UnmarshalMsg(data)
	if err == nil && isMap(w.AgentContext) {
		_, err = w.ctx.UnmarshalMsg(w.AgentContext)
	}
	if err == nil && isMap(w.Tool) {
		_, err = w.tool.UnmarshalMsg(w.Tool)
	}
	if err != nil {
		return nil, bad("invalid msgpack", err) // a map key neither str nor bin
	}
	return fromWire(&w, fromJSON)
}

func isMap(raw msgp.Raw) bool { return len(raw) > 0 && schemas.IsMsgpackMap(raw[0]) }

// jsonToMsgpack re-encodes a JSON record as msgpack for the one decoder,
// a number as the first of uint64, negative int64 or float64 it fits.
func jsonToMsgpack(data []byte) ([]byte, error) {
	if !utf8.Valid(data) {
		return nil, bad("invalid UTF-8", nil)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, bad("invalid JSON", err)
	}
	if d.More() {
		return nil, bad("trailing bytes after JSON", nil)
	}
	b, err := msgp.AppendIntf(nil, numbers(v))
	if err != nil {
		return nil, bad("invalid JSON", err)
	}
	return b, nil
}

// numbers replaces v's json.Numbers by what msgpack encodes.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil && i < 0 { // not "-0"
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64) // out of range: ±Inf
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

func bad(reason string, err error) error {
	return &schemas.DecodeError{Kind: Kind, Reason: reason, Err: err}
}

// fromWire checks a decoded record in the order of Dynamo's
// validate_tool_record, so that a record wrong in two ways gets the first
// one's reason.
func fromWire(w *wireRecord, fromJSON bool) (*Record, error) {
	var r Record
	var err error
	if r.Schema, err = str(w.Schema, "schema", true, MaxString); err != nil {
		return nil, err
	}
	if r.Schema != SchemaV1 {
		return nil, bad("unsupported schema", nil)
	}
	if r.EventType, err = str(w.EventType, "event_type", true, MaxString); err != nil {
		return nil, err
	}
	switch r.EventType {
	case ToolStart, ToolEnd, ToolError:
	case "request_end":
		return nil, bad("not a tool event", nil)
	default:
		return nil, bad("unknown event_type", nil)
	}
	if r.EventSource, err = str(w.EventSource, "event_source", true, MaxString); err != nil {
		return nil, err
	}
	switch r.EventSource {
	case "harness", "ms_agent":
		r.EventSource = "harness"
	default:
		return nil, bad("not harness-originated", nil)
	}
	t, present, err := u64(w.EventTimeUnixMs, "event_time_unix_ms", fromJSON)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, bad("missing event_time_unix_ms", nil)
	}
	r.EventTimeUnixMs = t
	if len(w.Request) != 0 {
		return nil, bad("tool event with request metrics", nil)
	}
	if err := mapMember(w.AgentContext, "agent_context"); err != nil {
		return nil, err
	}
	ac := &w.ctx
	for _, f := range []struct {
		name string
		src  *msgp.Raw
		dst  *string
	}{{"workflow_type_id", &ac.WorkflowTypeID, &r.AgentContext.WorkflowTypeID},
		{"workflow_id", &ac.WorkflowID, &r.AgentContext.WorkflowID},
		{"program_id", &ac.ProgramID, &r.AgentContext.ProgramID},
		{"parent_program_id", &ac.ParentProgramID, &r.AgentContext.ParentProgramID}} {
		if *f.dst, err = str(*f.src, f.name, false, math.MaxInt); err != nil {
			return nil, bad("agent_context: "+err.(*schemas.DecodeError).Reason, nil)
		}
	}
	if reason := schemas.CheckAgentContext(&r.AgentContext, 0); reason != "" {
		return nil, bad(reason, nil)
	}
	if err := mapMember(w.Tool, "tool"); err != nil {
		return nil, err
	}
	if err := readTool(&w.tool, &r.Tool, fromJSON); err != nil {
		return nil, err
	}
	return &r, nil
}

// mapMember checks that a map member came (as a map: nil is absent).
func mapMember(raw msgp.Raw, name string) error {
	switch {
	case len(raw) == 0:
		return bad("missing "+name, nil)
	case !isMap(raw):
		return bad("wrong type for "+name, nil)
	}
	return nil
}

func readTool(w *wireToolFields, t *Tool, fromJSON bool) error {
	var err error
	if t.ToolCallID, err = str(w.ToolCallID, "tool_call_id", true, MaxString); err != nil {
		return err
	}
	if t.ToolClass, err = str(w.ToolClass, "tool_class", true, MaxString); err != nil {
		return err
	}
	if t.ToolCallID == "" || t.ToolClass == "" {
		return bad("empty tool_call_id or tool_class", nil)
	}
	status, err := str(w.Status, "status", false, MaxString)
	if err != nil {
		return err
	}
	if status != "" {
		var known bool
		if t.Status, known = statusAliases[status]; !known {
			return bad("unknown tool status", nil)
		}
	}
	if t.ToolNameHash, err = str(w.ToolNameHash, "tool_name_hash", false, MaxString); err != nil {
		return err
	}
	if t.ErrorType, err = str(w.ErrorType, "error_type", false, MaxString); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		src  *msgp.Raw
		dst  *uint64
	}{{"started_at_unix_ms", &w.StartedAtUnixMs, &t.StartedAtUnixMs},
		{"ended_at_unix_ms", &w.EndedAtUnixMs, &t.EndedAtUnixMs},
		{"output_tokens", &w.OutputTokens, &t.OutputTokens}, {"output_bytes", &w.OutputBytes, &t.OutputBytes}} {
		if *f.dst, _, err = u64(*f.src, f.name, fromJSON); err != nil {
			return err
		}
	}
	d, present, err := f64(w.DurationMs, "duration_ms", fromJSON)
	if err != nil {
		return err
	}
	if present && (math.IsNaN(d) || math.IsInf(d, 0) || d < 0) {
		return bad("duration_ms not a finite non-negative number", nil)
	}
	t.DurationMs, t.HasDuration = d, present
	return nil
}

// str reads a string member: msgpack str (never bin, as serde's String),
// UTF-8, at most max bytes. A nil or absent optional member is "".
func str(raw msgp.Raw, name string, required bool, max int) (string, error) {
	if len(raw) == 0 {
		if required {
			return "", bad("missing "+name, nil)
		}
		return "", nil
	}
	s, _, err := msgp.ReadStringZC(raw)
	switch {
	case err != nil:
		return "", bad("wrong type for "+name, nil)
	case len(s) > max:
		return "", bad(name+" too long", nil)
	case !utf8.Valid(s):
		return "", bad("invalid UTF-8", nil)
	}
	return string(s), nil
}

// u64 reads a non-negative integer member (serde u64); nil or absent is
// not present. A raw member is one whole msgpack object (msgp.Raw checked
// it), so its reads cannot fail. From JSON, where a number has no type,
// one that is not a u64 (a float from jsonToMsgpack) is out of range.
func u64(raw msgp.Raw, name string, fromJSON bool) (uint64, bool, error) {
	switch msgp.NextType(raw) {
	case msgp.InvalidType: // absent or nil
		return 0, false, nil
	case msgp.UintType:
		u, _, _ := msgp.ReadUint64Bytes(raw)
		return u, true, nil
	case msgp.IntType:
		if i, _, _ := msgp.ReadInt64Bytes(raw); i >= 0 {
			return uint64(i), true, nil
		}
		return 0, false, bad(name+" out of range", nil)
	case msgp.Float64Type:
		if fromJSON {
			return 0, false, bad(name+" out of range", nil)
		}
	}
	return 0, false, bad("wrong type for "+name, nil)
}

// f64 reads a number member into a float64, as serde reads any number
// into an f64. From JSON, an infinity is a number past float64's range.
func f64(raw msgp.Raw, name string, fromJSON bool) (float64, bool, error) {
	switch msgp.NextType(raw) {
	case msgp.InvalidType: // absent or nil
		return 0, false, nil
	case msgp.UintType:
		u, _, _ := msgp.ReadUint64Bytes(raw)
		return float64(u), true, nil
	case msgp.IntType:
		i, _, _ := msgp.ReadInt64Bytes(raw)
		return float64(i), true, nil
	case msgp.Float64Type, msgp.Float32Type:
		f, _, _ := msgp.ReadFloat64Bytes(raw)
		if fromJSON && math.IsInf(f, 0) {
			return 0, false, bad(name+" out of range", nil)
		}
		return f, true, nil
	}
	return 0, false, bad("wrong type for "+name, nil)
}

// errReason returns a DecodeError's reason, for counters.
func errReason(err error) string {
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return "invalid"
}
