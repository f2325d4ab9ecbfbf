package agentevents

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

func toolRecord(event string, mutate func(top, tool map[string]any)) map[string]any {
	tool := map[string]any{"tool_call_id": "call-abc", "tool_class": "web_search"}
	top := map[string]any{
		"schema": SchemaV1, "event_type": event, "event_time_unix_ms": int64(1777312801500), "event_source": "harness",
		"agent_context": map[string]any{"workflow_type_id": "deep_research", "workflow_id": "research-run-42",
			"program_id": "research-run-42:researcher"},
		"tool": tool,
	}
	if mutate != nil {
		mutate(top, tool)
	}
	return top
}

func pack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgp.AppendIntf(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeRecord: Dynamo's documented tool_end (docs/agents/
// agent-tracing.md), in msgpack and JSON, with serde's aliases and an
// integer duration.
func TestDecodeRecord(t *testing.T) {
	rec := toolRecord(ToolEnd, func(top, tool map[string]any) {
		tool["status"], tool["duration_ms"] = "ok", 420.5
		tool["started_at_unix_ms"], tool["ended_at_unix_ms"] = int64(1777312801080), uint64(1777312801500)
		top["event_source"] = "ms_agent"
		top["unknown_member"] = []any{"skipped"}
	})
	r, err := Decode(pack(t, rec), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.EventType != ToolEnd || r.EventSource != "harness" || r.Tool.Status != StatusSucceeded ||
		!r.Tool.HasDuration || r.Tool.DurationMs != 420.5 || r.Tool.StartedAtUnixMs != 1777312801080 {
		t.Errorf("decoded %+v", r)
	}
	if r.Session() != "research-run-42/research-run-42:researcher" || !r.Terminal() {
		t.Errorf("session %q terminal %v", r.Session(), r.Terminal())
	}
	if Subject(r) != "agent.events.research-run-42" {
		t.Errorf("subject %q", Subject(r))
	}
	js := `{"schema":"dynamo.agent.trace.v1","event_type":"tool_error","event_time_unix_ms":5,"event_source":"harness",` +
		`"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"},` +
		`"tool":{"tool_call_id":"c","tool_class":"bash","status":"timeout","duration_ms":1000,"error_type":"Timeout"}}`
	r, err = Decode([]byte(js), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Tool.Status != StatusCancelled || r.Tool.DurationMs != 1000 || r.Tool.ErrorType != "Timeout" {
		t.Errorf("JSON decoded %+v", r)
	}
}

// TestDecodeRecordRefuses: what Dynamo's validate_tool_record or serde
// would refuse, and hostile values, each with its reason.
func TestDecodeRecordRefuses(t *testing.T) {
	huge := strings.Repeat("x", schemas.DefaultMaxAgentID+1)
	for _, tc := range []struct {
		name   string
		mut    func(top, tool map[string]any)
		reason string
	}{
		{"schema v2", func(top, _ map[string]any) { top["schema"] = "dynamo.agent.trace.v2" }, "unsupported schema"},
		{"request_end", func(top, _ map[string]any) { top["event_type"] = "request_end" }, "not a tool event"},
		{"dynamo source", func(top, _ map[string]any) { top["event_source"] = "dynamo" }, "not harness-originated"},
		{"request metrics", func(top, _ map[string]any) { top["request"] = map[string]any{"request_id": "r"} }, "tool event with request metrics"},
		{"no tool", func(top, _ map[string]any) { delete(top, "tool") }, "missing tool"},
		{"no context", func(top, _ map[string]any) { delete(top, "agent_context") }, "missing agent_context"},
		{"huge program", func(top, _ map[string]any) {
			top["agent_context"].(map[string]any)["program_id"] = huge
		}, "agent_context program_id too long"},
		{"empty workflow", func(top, _ map[string]any) {
			top["agent_context"].(map[string]any)["workflow_id"] = ""
		}, "agent_context missing workflow_id"},
		{"int program", func(top, _ map[string]any) {
			top["agent_context"].(map[string]any)["program_id"] = int64(7)
		}, "agent_context: wrong type for program_id"},
		{"bin class", func(_, tool map[string]any) { tool["tool_class"] = []byte("bash") }, "wrong type for tool_class"},
		{"negative duration", func(_, tool map[string]any) { tool["duration_ms"] = -1.0 }, "duration_ms not a finite non-negative number"},
		{"string duration", func(_, tool map[string]any) { tool["duration_ms"] = "1s" }, "wrong type for duration_ms"},
		{"negative time", func(top, _ map[string]any) { top["event_time_unix_ms"] = int64(-5) }, "event_time_unix_ms out of range"},
		{"no time", func(top, _ map[string]any) { delete(top, "event_time_unix_ms") }, "missing event_time_unix_ms"},
		{"odd status", func(_, tool map[string]any) { tool["status"] = "maybe" }, "unknown tool status"},
		{"long class", func(_, tool map[string]any) { tool["tool_class"] = huge }, "tool_class too long"},
	} {
		_, err := Decode(pack(t, toolRecord(ToolStart, tc.mut)), "")
		var de *schemas.DecodeError
		if !errors.As(err, &de) || de.Reason != tc.reason || de.Kind != Kind || !errors.Is(err, schemas.ErrMalformed) {
			t.Errorf("%s: %v, want reason %q", tc.name, err, tc.reason)
		}
	}
	deep := []byte{0x81, 0xa1, 'a'}
	for range 20 {
		deep = append(deep, 0x91)
	}
	deep = append(deep, 0xc0)
	if _, err := Decode(deep, ""); err == nil || errReason(err) != "msgpack nested too deeply" {
		t.Errorf("deep: %v", err)
	}
	if _, err := Decode(append(pack(t, toolRecord(ToolStart, nil)), 0xc0), ""); errReason(err) != "trailing bytes after msgpack" {
		t.Errorf("trailing: %v", err)
	}
}

func seqFrame(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// TestParseFrame: the three frames, strictly.
func TestParseFrame(t *testing.T) {
	good := pack(t, toolRecord(ToolStart, nil))
	f, err := ParseFrame([][]byte{[]byte("h1"), seqFrame(7), good})
	if err != nil || f.Seq != 7 || f.Topic != "h1" || f.Record.Tool.ToolClass != "web_search" {
		t.Fatalf("%+v %v", f, err)
	}
	for _, tc := range []struct {
		frames [][]byte
		reason string
	}{
		{[][]byte{seqFrame(1), good}, "not 3 frames"},
		{[][]byte{nil, seqFrame(1), good, nil}, "not 3 frames"},
		{[][]byte{nil, {0, 1}, good}, "seq not 8 bytes"},
		{[][]byte{[]byte("a\nb"), seqFrame(1), good}, "topic not printable UTF-8"},
		{[][]byte{[]byte(strings.Repeat("t", MaxTopic+1)), seqFrame(1), good}, "topic too long"},
		{[][]byte{nil, seqFrame(1), []byte("{not msgpack")}, "record not a msgpack map"},
		{[][]byte{nil, seqFrame(1), {0xc1}}, "record not a msgpack map"},
		{[][]byte{nil, seqFrame(1), {0x81, 0xa1}}, "invalid msgpack"},
	} {
		if _, err := ParseFrame(tc.frames); errReason(err) != tc.reason {
			t.Errorf("%q: %v, want %q", tc.frames, err, tc.reason)
		}
	}
}

// TestMsgID: one record seen twice has one id; the same seq from a
// restarted harness (another record) has another.
func TestMsgID(t *testing.T) {
	a := pack(t, toolRecord(ToolStart, nil))
	b := pack(t, toolRecord(ToolStart, func(top, _ map[string]any) { top["event_time_unix_ms"] = int64(1777312809999) }))
	if MsgID("h", 1, a) != MsgID("h", 1, append([]byte(nil), a...)) {
		t.Error("same record, different ids")
	}
	if MsgID("h", 1, a) == MsgID("h", 1, b) || MsgID("h", 1, a) == MsgID("g", 1, a) || MsgID("h", 1, a) == MsgID("h", 2, a) {
		t.Error("distinct records share an id")
	}
}

// BenchmarkDecode: one tool_end record as a harness sends it.
func BenchmarkDecode(b *testing.B) {
	rec := pack(b, toolRecord(ToolEnd, func(_, tool map[string]any) {
		tool["status"], tool["duration_ms"], tool["output_tokens"] = "ok", 420.5, int64(812)
	}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(rec, ContentType); err != nil {
			b.Fatal(err)
		}
	}
}
