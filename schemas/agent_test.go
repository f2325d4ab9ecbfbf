package schemas

import (
	"errors"
	"testing"

	"github.com/tinylib/msgp/msgp"
	"strings"
)

// TestDecodeNvExt: Dynamo's nvext on requests and responses, in JSON and
// msgpack alike; the session defaults to the agent's program qualified by
// its workflow, an explicit session_id wins, and other nvext members are
// skipped.
func TestDecodeNvExt(t *testing.T) {
	const body = `{"request_id":"r1","nvext":{"greed_sampling":true,"annotations":["x"],` +
		`"agent_context":{"workflow_type_id":"deep_research","workflow_id":"run-42","program_id":"run-42:researcher","parent_program_id":"run-42:planner"},` +
		`"agent_hints":{"priority":-3,"strict_priority":2,"osl":512,"speculative_prefill":true,"latency_sensitivity":1.5}}}`
	req, err := DecodeRequest([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	if req.SessionID != "run-42/run-42:researcher" {
		t.Errorf("session %q, want the program qualified by the workflow", req.SessionID)
	}
	want := AgentHints{Priority: -3, StrictPriority: 2, Osl: 512, SpeculativePrefill: true}
	if got := req.NvExt.Hints(); got != want {
		t.Errorf("hints %+v, want %+v", got, want)
	}
	if c := req.NvExt.Context(); c == nil || c.ParentProgramID != "run-42:planner" || c.WorkflowTypeID != "deep_research" {
		t.Errorf("context %+v", c)
	}
	packed, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeRequest(packed, "application/msgpack")
	if err != nil {
		t.Fatal(err)
	}
	if again.SessionID != req.SessionID || again.NvExt.Hints() != want || *again.NvExt.Context() != *req.NvExt.Context() {
		t.Errorf("msgpack gave %+v", again)
	}
	explicit, err := DecodeRequest([]byte(`{"request_id":"r2","session_id":"mine","nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"}}}`), "")
	if err != nil || explicit.SessionID != "mine" {
		t.Errorf("explicit session: %+v, %v", explicit, err)
	}
	resp, err := DecodeResponse([]byte(`{"request_id":"r1","worker_id":3,"nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"}}}`), "")
	if err != nil || resp.SessionID != "w/p" {
		t.Errorf("response: %+v, %v", resp, err)
	}
	// No nvext: the msgpack encoding is what it was (the fast path's shape).
	plain, _ := (&RequestEvent{RequestID: "r"}).MarshalMsg(nil)
	if strings.Contains(string(plain), "nvext") {
		t.Errorf("a request without nvext encodes the key: %q", plain)
	}
}

// TestDecodeNvExtHostile: ids that are missing, huge or of the wrong
// type, and hints out of their Rust types' range, are malformed with a
// reason naming the field.
func TestDecodeNvExtHostile(t *testing.T) {
	ctx := func(inner string) string { return `{"request_id":"r","nvext":{"agent_context":{` + inner + `}}}` }
	huge := strings.Repeat("p", DefaultMaxAgentID+1)
	for _, tc := range []struct{ in, reason string }{
		{ctx(`"workflow_type_id":"t","workflow_id":"w"`), "agent_context missing program_id"},
		{ctx(`"workflow_type_id":"t","workflow_id":"","program_id":"p"`), "agent_context missing workflow_id"},
		{ctx(`"workflow_type_id":"t","workflow_id":"w","program_id":"` + huge + `"`), "agent_context program_id too long"},
		{ctx(`"workflow_type_id":"t","workflow_id":"w","program_id":"p","parent_program_id":"` + huge + `"`), "agent_context parent_program_id too long"},
		{ctx(`"workflow_type_id":"t","workflow_id":"w","program_id":7`), "wrong type for nvext.agent_context.program_id"},
		{`{"request_id":"r","nvext":{"agent_hints":{"priority":"high"}}}`, "wrong type for nvext.agent_hints.priority"},
		{`{"request_id":"r","nvext":{"agent_hints":{"priority":2147483648}}}`, "wrong type for nvext.agent_hints.priority"},
		{`{"request_id":"r","nvext":{"agent_hints":{"osl":-1}}}`, "wrong type for nvext.agent_hints.osl"},
		{`{"request_id":"r","nvext":{"agent_hints":{"speculative_prefill":"yes"}}}`, "wrong type for nvext.agent_hints.speculative_prefill"},
		{`{"request_id":"r","nvext":[]}`, "wrong type for nvext"},
	} {
		_, err := DecodeRequest([]byte(tc.in), "")
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != tc.reason {
			t.Errorf("%.80s: %v, want reason %q", tc.in, err, tc.reason)
		}
	}
	// msgpack: a program id as an int, a priority past i32.
	for _, tc := range []struct {
		in     []byte
		reason string
	}{
		{mp(map[string]any{"request_id": "r", "nvext": map[string]any{"agent_context": map[string]any{"program_id": 7}}}), "wrong msgpack type"},
		{mp(map[string]any{"request_id": "r", "nvext": map[string]any{"agent_hints": map[string]any{"priority": int64(1) << 40}}}), "number overflows its field"},
	} {
		_, err := DecodeRequest(tc.in, "application/msgpack")
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != tc.reason {
			t.Errorf("%x: %v, want reason %q", tc.in, err, tc.reason)
		}
	}
	for _, r := range []string{"agent_context missing program_id", "agent_context parent_program_id too long"} {
		found := false
		for _, x := range AgentDecodeReasons {
			found = found || x == r
		}
		if !found {
			t.Errorf("AgentDecodeReasons lacks %q", r)
		}
	}
}

func mp(v map[string]any) []byte {
	b, err := msgp.AppendIntf(nil, v)
	if err != nil {
		panic(err)
	}
	return b
}
