package agentevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	var v any
	if f == schemas.FormatJSON {
		if !utf8.Valid(data) {
			return nil, bad("invalid UTF-8", nil)
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, bad("invalid JSON", err)
		}
		if d.More() {
			return nil, bad("trailing bytes after JSON", nil)
		}
	} else {
		data = bytes.TrimLeft(data, " \t\r\n")
		// The generic decode below recurses and allocates what headers
		// claim; the bounded walk checks both first.
		rest, err := schemas.SkipMsgpack(data, maxRecordDepth)
		switch {
		case errors.Is(err, schemas.ErrMsgpackTooDeep):
			return nil, bad(err.Error(), nil)
		case err != nil:
			return nil, bad("invalid msgpack", err)
		case len(rest) != 0:
			return nil, bad("trailing bytes after msgpack", nil)
		}
		v, _, err = msgp.ReadIntfBytes(data)
		if err != nil {
			return nil, bad("invalid msgpack", err)
		}
	}
	return fromValue(v)
}

func bad(reason string, err error) error {
	return &schemas.DecodeError{Kind: Kind, Reason: reason, Err: err}
}

// fields reads a map value as an object; nil for anything else.
func fields(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

func fromValue(v any) (*Record, error) {
	top, ok := fields(v)
	if !ok {
		return nil, bad("record is not a map", nil)
	}
	var r Record
	var err error
	if r.Schema, err = str(top, "schema", true, MaxString); err != nil {
		return nil, err
	}
	if r.Schema != SchemaV1 {
		return nil, bad("unsupported schema", nil)
	}
	if r.EventType, err = str(top, "event_type", true, MaxString); err != nil {
		return nil, err
	}
	switch r.EventType {
	case ToolStart, ToolEnd, ToolError:
	case "request_end":
		return nil, bad("not a tool event", nil)
	default:
		return nil, bad("unknown event_type", nil)
	}
	if r.EventSource, err = str(top, "event_source", true, MaxString); err != nil {
		return nil, err
	}
	switch r.EventSource {
	case "harness", "ms_agent":
		r.EventSource = "harness"
	default:
		return nil, bad("not harness-originated", nil)
	}
	t, present, err := u64(top, "event_time_unix_ms")
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, bad("missing event_time_unix_ms", nil)
	}
	r.EventTimeUnixMs = t
	if req, ok := top["request"]; ok && req != nil {
		return nil, bad("tool event with request metrics", nil)
	}
	ac, ok := top["agent_context"]
	if !ok || ac == nil {
		return nil, bad("missing agent_context", nil)
	}
	acm, ok := fields(ac)
	if !ok {
		return nil, bad("wrong type for agent_context", nil)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"workflow_type_id", &r.AgentContext.WorkflowTypeID}, {"workflow_id", &r.AgentContext.WorkflowID},
		{"program_id", &r.AgentContext.ProgramID}, {"parent_program_id", &r.AgentContext.ParentProgramID}} {
		if *f.dst, err = str(acm, f.name, false, math.MaxInt); err != nil {
			return nil, bad("agent_context: "+err.(*schemas.DecodeError).Reason, nil)
		}
	}
	if reason := schemas.CheckAgentContext(&r.AgentContext, 0); reason != "" {
		return nil, bad(reason, nil)
	}
	tv, ok := top["tool"]
	if !ok || tv == nil {
		return nil, bad("missing tool", nil)
	}
	tm, ok := fields(tv)
	if !ok {
		return nil, bad("wrong type for tool", nil)
	}
	if err := readTool(tm, &r.Tool); err != nil {
		return nil, err
	}
	return &r, nil
}

func readTool(m map[string]any, t *Tool) error {
	var err error
	if t.ToolCallID, err = str(m, "tool_call_id", true, MaxString); err != nil {
		return err
	}
	if t.ToolClass, err = str(m, "tool_class", true, MaxString); err != nil {
		return err
	}
	if t.ToolCallID == "" || t.ToolClass == "" {
		return bad("empty tool_call_id or tool_class", nil)
	}
	status, err := str(m, "status", false, MaxString)
	if err != nil {
		return err
	}
	if status != "" {
		var known bool
		if t.Status, known = statusAliases[status]; !known {
			return bad("unknown tool status", nil)
		}
	}
	if t.ToolNameHash, err = str(m, "tool_name_hash", false, MaxString); err != nil {
		return err
	}
	if t.ErrorType, err = str(m, "error_type", false, MaxString); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *uint64
	}{{"started_at_unix_ms", &t.StartedAtUnixMs}, {"ended_at_unix_ms", &t.EndedAtUnixMs},
		{"output_tokens", &t.OutputTokens}, {"output_bytes", &t.OutputBytes}} {
		if *f.dst, _, err = u64(m, f.name); err != nil {
			return err
		}
	}
	d, present, err := f64(m, "duration_ms")
	if err != nil {
		return err
	}
	if present && (math.IsNaN(d) || math.IsInf(d, 0) || d < 0) {
		return bad("duration_ms not a finite non-negative number", nil)
	}
	t.DurationMs, t.HasDuration = d, present
	return nil
}

// str reads a string member: msgpack str or JSON string (never bin),
// UTF-8, at most max bytes. A nil or absent optional member is "".
func str(m map[string]any, name string, required bool, max int) (string, error) {
	v, ok := m[name]
	if !ok || v == nil {
		if required {
			return "", bad("missing "+name, nil)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", bad("wrong type for "+name, nil)
	}
	if len(s) > max {
		return "", bad(name+" too long", nil)
	}
	if !utf8.ValidString(s) {
		return "", bad("invalid UTF-8", nil)
	}
	return s, nil
}

// u64 reads a non-negative integer member (serde u64); nil or absent is
// not present.
func u64(m map[string]any, name string) (uint64, bool, error) {
	v, ok := m[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case int64:
		if n >= 0 {
			return uint64(n), true, nil
		}
	case uint64:
		return n, true, nil
	case json.Number:
		var u uint64
		if _, err := fmt.Sscan(string(n), &u); err == nil && isInt(string(n)) {
			return u, true, nil
		}
	default:
		return 0, false, bad("wrong type for "+name, nil)
	}
	return 0, false, bad(name+" out of range", nil)
}

func isInt(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// f64 reads a number member into a float64, as serde reads any number
// into an f64.
func f64(m map[string]any, name string) (float64, bool, error) {
	v, ok := m[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case float64:
		return n, true, nil
	case float32:
		return float64(n), true, nil
	case int64:
		return float64(n), true, nil
	case uint64:
		return float64(n), true, nil
	case json.Number:
		f, err := n.Float64()
		if err != nil {
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
