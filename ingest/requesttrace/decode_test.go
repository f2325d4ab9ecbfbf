package requesttrace

import (
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

func prompt(n int) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(i*7 + 3)
	}
	return p
}

func marshal(t testing.TB, r *dynamotrace.Record) []byte {
	t.Helper()
	b, err := dynamotrace.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func agentTurn() dynamotrace.Turn {
	return dynamotrace.Turn{RequestID: "req-1", Session: "sess-a", Parent: "root", Trigger: "tool_result",
		Model: "Qwen/Qwen3-8B", Prompt: prompt(100), BlockSize: 16, Worker: 7, DpRank: 2,
		FinishReason: "tool_calls", ToolCalls: []string{"web_search", "read_file"}, ReceivedMs: 1_700_000_000_000,
		TotalMs: 812.5, OutputTokens: 40, CachedTokens: 64}
}

func TestDecodeAgentRequestEnd(t *testing.T) {
	turn := agentTurn()
	r, err := Decode(marshal(t, turn.RequestEnd()))
	if err != nil {
		t.Fatal(err)
	}
	if r.EventType != RequestEnd || r.EventSource != SourceDynamo || r.Session() != "sess-a" ||
		r.Trigger() != TriggerToolResult || r.AgentContext.ParentSessionID != "root" {
		t.Fatalf("record %+v %+v", r, r.AgentContext)
	}
	m := r.Request
	if m.RequestID != "req-1" || m.Model != "Qwen/Qwen3-8B" || *m.InputTokens != 100 || *m.KVHitRate != 0.64 ||
		*m.TotalTimeMs != 812.5 || *m.RequestReceivedMs != turn.ReceivedMs {
		t.Fatalf("metrics %+v", m)
	}
	// 100 tokens at 16: 6 full blocks and a partial one; its hash dropped.
	all := dynamotrace.Hashes(turn.Prompt, 16)
	if len(m.Replay.Hashes) != 7 || !m.Replay.HasPartialTail() || !slices.Equal(m.Replay.Full(), all[:6]) {
		t.Fatalf("replay %d hashes, full %v, want %v", len(m.Replay.Hashes), m.Replay.Full(), all[:6])
	}
	resp := r.Response()
	if resp.RequestID != "req-1" || resp.SessionID != "sess-a" || resp.Model != "Qwen/Qwen3-8B" ||
		resp.WorkerID != 7 || resp.DpRank != 2 || resp.FinishReason != "tool_calls" ||
		len(resp.ToolCalls) != 2 || resp.ToolCalls[1].Name != "read_file" ||
		resp.CompletedAtMs != int64(turn.ReceivedMs)+813 {
		t.Fatalf("response %+v", resp)
	}
	if c := resp.NvExt.Context(); schemas.AgentSession(c) != Workflow+"/sess-a" || c.ParentProgramID != "root" {
		t.Fatalf("response agent %+v", c)
	}
	req := r.RequestEvent(nil)
	if req.RequestID != "req-1" || req.ReceivedAtMs != int64(turn.ReceivedMs) || schemas.AgentSession(req.NvExt.Context()) != Workflow+"/sess-a" {
		t.Fatalf("request %+v", req)
	}
}

// A trigger or source a later Dynamo adds is kept, not refused.
func TestDecodeKeepsNewEnumValues(t *testing.T) {
	end := string(marshal(t, agentTurn().RequestEnd()))
	end = strings.Replace(end, `"tool_result"`, `"scheduled"`, 1)
	end = strings.Replace(end, `"event_source":"dynamo"`, `"event_source":"router"`, 1)
	r, err := Decode([]byte(end))
	if err != nil || r.Trigger() != "scheduled" || r.EventSource != "router" {
		t.Fatalf("%v %+v", err, r)
	}
}

func TestDecodeFullPromptKeepsEveryHash(t *testing.T) {
	turn := agentTurn()
	turn.Prompt = prompt(96)
	r, err := Decode(marshal(t, turn.RequestEnd()))
	if err != nil {
		t.Fatal(err)
	}
	if rp := r.Request.Replay; len(rp.Full()) != 6 || rp.HasPartialTail() {
		t.Fatalf("96 tokens at 16: %d full hashes, tail %v", len(rp.Full()), rp.HasPartialTail())
	}
}

// emit_request_end's record: no source, no agent context, no model.
func TestDecodePlainRequestEnd(t *testing.T) {
	turn := agentTurn()
	turn.Session = ""
	r, err := Decode(marshal(t, turn.RequestEnd()))
	if err != nil {
		t.Fatal(err)
	}
	resp := r.Response()
	if r.EventSource != "" || r.AgentContext != nil || resp.SessionID != "" || resp.NvExt != nil ||
		resp.Model != "" || resp.FinishReason != "" || r.Request.Replay.FullBlocks() != 6 {
		t.Fatalf("record %+v response %+v", r, resp)
	}
}

func TestDecodeToolRecords(t *testing.T) {
	for _, ev := range []string{ToolStart, ToolEnd, ToolError} {
		end := uint64(0)
		if ev != ToolStart {
			end = 4_000
		}
		r, err := Decode(marshal(t, dynamotrace.Tool(ev, "sess-a", "call-1", "web_search", 1_000, end)))
		if err != nil {
			t.Fatal(ev, err)
		}
		a := r.AgentRecord()
		if a.EventType != ev || a.Session() != Workflow+"/sess-a" || a.Tool.ToolCallID != "call-1" ||
			a.Tool.ToolClass != "web_search" || a.Tool.StartedAtUnixMs != 1_000 || a.EventSource != SourceHarness {
			t.Fatalf("%s: %+v", ev, a)
		}
		if ev != ToolStart && (!a.Tool.HasDuration || a.Tool.DurationMs != 3_000 || a.Tool.EndedAtUnixMs != 4_000) {
			t.Fatalf("%s: tool %+v", ev, a.Tool)
		}
		if r.Response() != nil {
			t.Fatal("a tool record has no response")
		}
	}
}

func TestDecodePayload(t *testing.T) {
	turn := agentTurn()
	msgs := json.RawMessage(`[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"c1","content":"42"}]`)
	r, err := Decode(marshal(t, turn.RequestPayload(msgs, map[string]string{"X-Dynamo-Experimental-Wakeup": "1"})))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Payload
	if p.RequestID != "req-1" || p.Endpoint != "openai.chat_completion" || !p.Complete || p.Headers["x-dynamo-experimental-wakeup"] != "1" {
		t.Fatalf("payload %+v", p)
	}
	if m := p.Messages(); len(m) != 3 || m[2].ToolCallID != "c1" || p.Trigger() != TriggerToolResult {
		t.Fatalf("messages %+v trigger %q", m, p.Trigger())
	}
	end, _ := Decode(marshal(t, turn.RequestEnd()))
	if req := end.RequestEvent(p); req.Headers["x-dynamo-experimental-wakeup"] != "1" {
		t.Fatalf("request %+v", req)
	}
}

func TestDecodeLine(t *testing.T) {
	rec := dynamotrace.Tool(ToolEnd, "s", "c", "x", 1, 2)
	bare := marshal(t, rec)
	for _, line := range [][]byte{bare, []byte(`{"timestamp":17,"event":` + string(bare) + "}\n")} {
		r, err := Limits{}.DecodeLine(line)
		if err != nil || r.Tool.ToolCallID != "c" || !IsRecordLine(line) {
			t.Fatalf("%s: %v %+v", line, err, r)
		}
	}
	if IsRecordLine([]byte(`{"timestamp":1,"input_length":10,"output_length":1,"hash_ids":[1]}`)) {
		t.Fatal("a Mooncake line taken for a record")
	}
}

func reasonOf(err error) string {
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

func TestDecodeRefuses(t *testing.T) {
	end := string(marshal(t, agentTurn().RequestEnd()))
	tool := string(marshal(t, dynamotrace.Tool(ToolStart, "s", "c", "x", 1, 0)))
	edit := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("%q not in %s", old, s)
		}
		return strings.Replace(s, old, new, 1)
	}
	for _, c := range []struct{ in, reason string }{
		{edit(end, `"dynamo.request.trace.v1"`, `"dynamo.request.trace.v2"`), ReasonSchema},
		{edit(end, `"request_end"`, `"request_start"`), ReasonEventType},
		{edit(end, `"schema":"dynamo.request.trace.v1",`, ``), "missing schema"},
		{edit(end, `"event_time_unix_ms":1700000000813,`, ``), "missing event_time_unix_ms"},
		{edit(end, `"request_id":"req-1",`, ``), "missing request_id"},
		{edit(tool, `"tool_class":"x",`, ``), "missing tool_class"},
		{edit(tool, `"agent_context":{"session_id":"s"},`, ``), "missing agent_context"},
		{edit(end, `"trace_block_size":16`, `"trace_block_size":-16`), "wrong type for request.replay.trace_block_size"},
		{edit(end, `"trace_block_size":16`, `"trace_block_size":16.5`), "wrong type for request.replay.trace_block_size"},
		{edit(end, `"event_time_unix_ms":1700000000813`, `"event_time_unix_ms":"1700000000813"`), "wrong type for event_time_unix_ms"},
		{edit(end, `"decode_worker_id":7`, `"decode_worker_id":18446744073709551616`), "wrong type for request.worker.decode_worker_id"},
		{edit(end, `"input_sequence_hashes":[`, `"input_sequence_hashes":[-1,`), "wrong type for request.replay.input_sequence_hashes"},
		{edit(end, `"trace_block_size":16`, `"trace_block_size":0`), ReasonBlockSize},
		{edit(end, `"input_length":100`, `"input_length":90`), ReasonHashesPastEnd},
		{edit(tool, `"running"`, `"paused"`), ReasonToolStatus},
		{`[1,2]`, ReasonNotObject},
		{`{"schema":`, ReasonInvalidJSON},
		{end + `{}`, ReasonInvalidJSON},
		{"{\"schema\":\"\xff\"}", ReasonInvalidUTF8},
		{strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100), ReasonTooDeep},
	} {
		_, err := Decode([]byte(c.in))
		if !errors.Is(err, schemas.ErrMalformed) || reasonOf(err) != c.reason {
			t.Errorf("%.80s...: %v, want %q", c.in, err, c.reason)
		}
	}
}

// A prompt of 10^6 blocks: refused by the byte bound at the defaults, and
// past it by the hash bound, with memory for the bound's hashes only.
func TestDecodeRefusesAMillionHashes(t *testing.T) {
	build := func(hash string) []byte {
		var b strings.Builder
		b.WriteString(`{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1,` +
			`"request":{"request_id":"r","replay":{"trace_block_size":16,"input_length":16000000,"input_sequence_hashes":[`)
		for i := range 1_000_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(hash)
		}
		b.WriteString(`]}}}`)
		return []byte(b.String())
	}
	real := build(strconv.FormatUint(1<<63+12345, 10))
	if _, err := Decode(real); reasonOf(err) != ReasonTooLarge {
		t.Fatalf("20 MB record: %v", err)
	}
	small := build("7")
	lim := Limits{MaxBytes: 64 << 20, MaxHashes: 1000}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := lim.Decode(small)
	runtime.ReadMemStats(&after)
	if reasonOf(err) != ReasonTooManyHashes {
		t.Fatalf("10^6 hashes: %v", err)
	}
	// 10^6 u64 would be 8 MB; the bound's 1,000 are 8 kB (and their
	// slice's growth).
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("refusing 10^6 hashes allocated %d bytes", got)
	}
	if _, err := (Limits{MaxBytes: 64 << 20}).Decode(small); reasonOf(err) != ReasonTooManyHashes {
		t.Fatalf("default hash bound: %v", err)
	}
}

// Every reason Decode gave above is listed in AllReasons (counters at 0).
func TestReasonsListed(t *testing.T) {
	all := AllReasons()
	for _, r := range []string{ReasonSchema, ReasonEventType, "missing schema", "missing request_id",
		"missing tool_class", "missing agent_context", ReasonTooManyHashes, ReasonTooLarge} {
		if !slices.Contains(all, r) {
			t.Errorf("%q not in AllReasons", r)
		}
	}
}

// The widest record Dynamo writes decodes, every field where it belongs.
func TestDecodeEveryField(t *testing.T) {
	r, err := Decode(marshal(t, dynamotrace.EveryField()))
	if err != nil {
		t.Fatal(err)
	}
	a, m := r.AgentContext, r.Request
	if a.SessionID != "s" || a.ParentSessionID != "p" || a.SessionFinal == nil || *a.SessionFinal || !a.EvictSession ||
		a.InputTrigger != TriggerToolResult {
		t.Fatalf("agent context %+v", a)
	}
	if m.XRequestID != "x" || *m.CachedTokens != 3 || *m.PrefillWaitTimeMs != 0.5 || *m.KVTransferEstimatedLatencyMs != 6 ||
		*m.QueueDepth != 7 || *m.Worker.PrefillWorkerID != 10 || *m.Worker.DecodeDpRank != 2 {
		t.Fatalf("metrics %+v", m)
	}
	if rp := m.Replay; rp.Hashes[0] != 18446744073709551615 || string(rp.KVHints) != `{"a":1}` || len(rp.Full()) != 1 || !rp.HasPartialTail() {
		t.Fatalf("replay %+v", rp)
	}
	f := m.Finish
	if f.FinishReason != "tool_calls" || f.BackendFinishReason != "stop" || string(f.StopReason) != `"eos"` ||
		f.ToolCalls[0] != (ToolCallMetadata{ChoiceIndex: 0, ToolCallIndex: 1, ID: "c", Name: "n"}) || f.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("finish %+v", f)
	}
	if id, dp, ok := m.WorkerID(); !ok || id != 11 || dp != 2 {
		t.Fatalf("worker %d/%d %v: want the decode worker", id, dp, ok)
	}
}

// The full-block hashes of a record are the ones hintstream derives from
// the same tokens (kvevents.PromptHashes, Dynamo's router rule): a prompt
// known by its trace hashes and one known by its tokens are one prompt.
func TestFullHashesAreThePromptHashes(t *testing.T) {
	for _, n := range []int{16, 100, 1000, 4096} {
		turn := agentTurn()
		turn.Prompt = prompt(n)
		r, err := Decode(marshal(t, turn.RequestEnd()))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Request.Replay.Full(), kvevents.PromptHashes(turn.Prompt, 16); !slices.Equal(got, want) {
			t.Fatalf("%d tokens: trace %v, hintstream %v", n, got, want)
		}
	}
}

// BenchmarkDecodeRequestEnd: Decode against encoding/json decoding the
// whole record, the list included (then parseHashes): the path the
// list's excision replaced.
func BenchmarkDecodeRequestEnd(b *testing.B) {
	turn := agentTurn()
	turn.Prompt = prompt(32 << 10) // 2,048 hashes at 16 tokens
	data := marshal(b, turn.RequestEnd())
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var rec wireRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				b.Fatal(err)
			}
			if _, reason := parseHashes(rec.Request.Replay.Hashes, DefaultMaxHashes); reason != "" {
				b.Fatal(reason)
			}
		}
	})
}

// The hash list read apart from the record (walk's span) and read by
// encoding/json where the walk cannot see it (an escaped key) are one
// list; a list that is not all numbers is refused either way.
func TestHashListPathsAgree(t *testing.T) {
	end := string(marshal(t, agentTurn().RequestEnd()))
	plain, err := Decode([]byte(end))
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := Decode([]byte(strings.Replace(end, `"input_sequence_hashes"`, `"input\u005fsequence_hashes"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plain.Request.Replay.Hashes, escaped.Request.Replay.Hashes) || len(plain.Request.Replay.Hashes) != 7 {
		t.Fatalf("walked %v, escaped %v", plain.Request.Replay.Hashes, escaped.Request.Replay.Hashes)
	}
	for _, list := range []string{`[1,"]",2]`, `[1,[2]]`, `[1.5]`, `{"a":1}`} {
		bad := strings.Replace(end, `"input_sequence_hashes":[`, `"input_sequence_hashes":`+list+`,"x":[`, 1)
		if _, err := Decode([]byte(bad)); reasonOf(err) != "wrong type for request.replay.input_sequence_hashes" {
			t.Errorf("%s: %v", list, err)
		}
	}
}
