package dynamotrace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"
)

// ryu's output for these (serde_json::to_string(&f64)); the Rust crate's
// own tests list most of them (ryu tests/d2s_test.rs, pretty format).
func TestF64AsSerde(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0.0"}, {1, "1.0"}, {12.5, "12.5"}, {0.1, "0.1"}, {1.5e-7, "1.5e-7"}, {1e-5, "0.00001"}, {1e-6, "1e-6"},
		{0.0001, "0.0001"}, {123456789, "123456789.0"}, {1e15, "1000000000000000.0"}, {1e16, "1e16"},
		{1.2345e16, "1.2345e16"}, {-2.5, "-2.5"}, {0.3333333333333333, "0.3333333333333333"},
		{1234.5678, "1234.5678"}, {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e308"}} {
		b, err := F64(c.v).MarshalJSON()
		if err != nil || string(b) != c.want {
			t.Errorf("F64(%v) = %s, want %s", c.v, b, c.want)
		}
	}
}

// The bytes of a record with every optional of emit_request_end's record
// absent, as serde_json writes it (types.rs's own test checks the same
// omissions: no event_source, agent_context, tool, payload, model,
// finish_reason_metadata).
func TestMarshalOmitsNoneAsSerde(t *testing.T) {
	r := &Record{Schema: "dynamo.request.trace.v1", EventType: "request_end", EventTimeUnixMs: 1100,
		Request: &Metrics{RequestID: "req-1", OutputTokens: Ptr(uint64(4)), RequestReceivedMs: Ptr(uint64(1000)),
			Replay: &ReplayMetrics{TraceBlockSize: 2, InputLength: 4, InputSequenceHashes: []uint64{11, 22}}}}
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1100,` +
		`"request":{"request_id":"req-1","output_tokens":4,"request_received_ms":1000,` +
		`"replay":{"trace_block_size":2,"input_length":4,"input_sequence_hashes":[11,22]}}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// An empty hash list is still written (no skip_serializing_if).
	r.Request.Replay.InputSequenceHashes = nil
	if b, _ = Marshal(r); !bytes.Contains(b, []byte(`"input_sequence_hashes":[]`)) {
		t.Fatalf("empty hashes omitted: %s", b)
	}
}

func TestMarshalEscapesAsSerde(t *testing.T) {
	r := Tool("tool_start", "s<&>\u2028\u2029\b\f\x01\"\\", "c", "x", 1, 0)
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `"session_id":"s<&>` + "\u2028\u2029" + `\b\f\u0001\"\\"`
	if !bytes.Contains(b, []byte(want)) {
		t.Fatalf("got %s, want it to contain %s", b, want)
	}
	// A literal backslash-u2028 stays escaped.
	r = Tool("tool_start", `\u2028`, "c", "x", 1, 0)
	if b, _ = Marshal(r); !bytes.Contains(b, []byte(`"session_id":"\\u2028"`)) {
		t.Fatalf("got %s", b)
	}
}

func TestHashesMatchVectors(t *testing.T) {
	var v struct {
		Cases []struct {
			Name      string   `json:"name"`
			BlockSize int      `json:"block_size"`
			Tokens    []uint32 `json:"tokens"`
			Sequence  []string `json:"sequence_hashes"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(testvectors.Read(t, "dynamo_block_hashes.json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range v.Cases {
		got := Hashes(c.Tokens, c.BlockSize)
		full := len(c.Tokens) / c.BlockSize
		if len(c.Sequence) != full {
			t.Fatalf("%s: vector has %d hashes for %d full blocks", c.Name, len(c.Sequence), full)
		}
		// One more hash for a partial tail, as replay.rs adds it.
		wantLen := full
		if len(c.Tokens)%c.BlockSize != 0 {
			wantLen++
		}
		if len(got) != wantLen {
			t.Fatalf("%s: %d hashes, want %d", c.Name, len(got), wantLen)
		}
		for i, s := range c.Sequence {
			if strconv.FormatUint(got[i], 10) != s {
				t.Fatalf("%s: hash %d = %d, want %s", c.Name, i, got[i], s)
			}
		}
	}
}

func TestFileSinkLines(t *testing.T) {
	recs := []*Record{Tool("tool_start", "s", "c1", "search", 10, 0), Tool("tool_end", "s", "c1", "search", 10, 30)}
	for _, gz := range []bool{false, true} {
		var buf bytes.Buffer
		s := NewFileSink(&buf, gz)
		at := s.start
		s.Now = func() time.Time { at = at.Add(5 * time.Millisecond); return at }
		if err := s.Write(recs[0]); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(recs[1]); err != nil {
			t.Fatal(err)
		}
		var r io.Reader = &buf
		if gz {
			zr, err := gzip.NewReader(&buf) // reads every member
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
		if len(lines) != 2 {
			t.Fatalf("gzip %v: %d lines: %s", gz, len(lines), out)
		}
		ev, _ := Marshal(recs[1])
		if want := `{"timestamp":10,"event":` + string(ev) + `}`; string(lines[1]) != want {
			t.Fatalf("gzip %v: line %s, want %s", gz, lines[1], want)
		}
	}
}

// Every field set: the order is the Rust structs' declaration order
// (types.rs@0366e63a, extensions.rs@004e2c53), as serde derives it.
func TestMarshalFieldOrderAsSerde(t *testing.T) {
	r := EveryField()
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":9,"event_source":"dynamo",` +
		`"agent_context":{"session_id":"s","parent_session_id":"p","session_final":false,"compaction":{"trigger":"auto",` +
		`"reason":"r","implementation":"i","phase":"ph","strategy":"st"},"kv_hints":{"evict_session":true},"input_trigger":"tool_result"},` +
		`"request":{"request_id":"q","x_request_id":"x","model":"m","input_tokens":1,"output_tokens":2,"cached_tokens":3,` +
		`"request_received_ms":4,"prefill_wait_time_ms":0.5,"prefill_time_ms":1.0,"ttft_ms":2.0,"total_time_ms":3.0,` +
		`"avg_itl_ms":4.0,"kv_hit_rate":0.25,"kv_transfer_estimated_latency_ms":6.0,"queue_depth":7,` +
		`"worker":{"prefill_worker_id":10,"prefill_dp_rank":1,"decode_worker_id":11,"decode_dp_rank":2},` +
		`"replay":{"trace_block_size":2,"input_length":3,"input_sequence_hashes":[18446744073709551615,1],"kv_hints":{"a":1}},` +
		`"finish_reason_metadata":{"finish_reason":"tool_calls","backend_finish_reason":"stop","stop_reason":"eos",` +
		`"tool_calls":[{"choice_index":0,"tool_call_index":1,"id":"c","name":"n"}],` +
		`"choices":[{"choice_index":0,"finish_reason":"tool_calls","backend_finish_reason":"stop","stop_reason":7}]}}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	tool := Tool("tool_error", "s", "c", "x", 5, 8)
	tool.Tool.ToolNameHash = Ptr("h")
	b, _ = Marshal(tool)
	want = `{"schema":"dynamo.request.trace.v1","event_type":"tool_error","event_time_unix_ms":8,"event_source":"harness",` +
		`"agent_context":{"session_id":"s"},"tool":{"tool_call_id":"c","tool_class":"x","started_at_unix_ms":5,` +
		`"ended_at_unix_ms":8,"status":"error","duration_ms":3.0,"output_bytes":512,"tool_name_hash":"h","error_type":"timeout"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
