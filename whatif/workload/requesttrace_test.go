package workload

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/dynamotrace"
)

func sessionsFile(t *testing.T, gz bool, c dynamotrace.SessionsConfig) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := dynamotrace.WriteFile(path, gz, 7, dynamotrace.Sessions(c)); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file the stand-in wrote as Dynamo's file sink does (plain and gzip):
// its requests in start order, sessions from agent_context, tool calls
// from finish_reason_metadata, block ids the full-block sequence hashes
// at trace_block_size, the serving workers counted.
func TestReadRequestTraceFile(t *testing.T) {
	c := dynamotrace.SessionsConfig{Sessions: 3, Turns: 4, BlockSize: 16, StartMs: 1_700_000_000_000, Workers: 2, Payloads: true}
	for _, gz := range []bool{false, true} {
		f, err := os.Open(sessionsFile(t, gz, c))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		isRT, r, err := IsRequestTrace(f)
		if err != nil || !isRT {
			t.Fatalf("gzip %v: detected %v, %v", gz, isRT, err)
		}
		rd, err := ReadRequestTrace(r, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Records) != 12 || rd.BlockSize != 16 || rd.Workers != 2 || rd.ToolEvents != 18 || rd.Model != "Qwen/Qwen3-8B" {
			t.Fatalf("gzip %v: %d records, block %d, %d workers, %d tool events, model %q", gz, len(rd.Records),
				rd.BlockSize, rd.Workers, rd.ToolEvents, rd.Model)
		}
		if rd.Records[0].Timestamp != 0 || !slices.IsSortedFunc(rd.Records, func(a, b Record) int { return int(a.Timestamp - b.Timestamp) }) {
			t.Fatalf("gzip %v: not in start order from 0", gz)
		}
		turns := map[string]int{}
		for i, r := range rd.Records {
			turns[r.Session]++
			// 4.5 blocks + 2 per turn: the partial half block is left out.
			k := turns[r.Session] - 1
			if want := 4 + 2*k; len(r.HashIDs) != want || r.InputLength != want*16 || r.OutputLength != 16 {
				t.Fatalf("record %d (turn %d): %d ids, %d tokens, output %d", i, k, len(r.HashIDs), r.InputLength, r.OutputLength)
			}
			last := k == c.Turns-1
			if wantTool := []string{"search", "run_tests"}[k%2]; !last && (r.FinishReason != "tool_calls" || r.Tool != wantTool) ||
				last && (r.FinishReason != "stop" || r.Tool != "") {
				t.Fatalf("record %d (turn %d): finish %q tool %q", i, k, r.FinishReason, r.Tool)
			}
		}
		if len(turns) != 3 || turns["s:agent-1"] != 4 {
			t.Fatalf("gzip %v: sessions %v", gz, turns)
		}
		// Turns of a session share their prefix's ids.
		first, second := rd.Records[0], rd.Records[3]
		if first.Session != second.Session || !slices.Equal(first.HashIDs, second.HashIDs[:len(first.HashIDs)]) {
			t.Fatalf("a next turn does not extend its previous one: %+v %+v", first, second)
		}
		w, err := FromRecords(rd.Records, TraceOptions{BlockSize: rd.BlockSize})
		if err != nil {
			t.Fatal(err)
		}
		if s := w.Stats(); s.Requests != 12 || s.Sessions != 3 || s.NextTurns != 9 || s.ToolCalls != 9 {
			t.Fatalf("gzip %v: workload %+v", gz, s)
		}
	}
}

// A turn whose record gives no finish reason follows a tool call when its
// next turn's trigger says tool_result.
func TestRequestTraceTriggerMarksToolCall(t *testing.T) {
	bs := 16
	p := make([]uint32, 3*bs)
	for i := range p {
		p[i] = uint32(i)
	}
	a := dynamotrace.Turn{RequestID: "a", Session: "s", Trigger: "user_message", Prompt: p, BlockSize: bs, ReceivedMs: 1000, TotalMs: 10, OutputTokens: 4}
	b := a
	b.RequestID, b.Trigger, b.ReceivedMs, b.Prompt = "b", "tool_result", 5000, append(append([]uint32(nil), p...), p...)
	var buf bytes.Buffer
	s := dynamotrace.NewFileSink(&buf, false)
	if err := s.Write(a.RequestEnd(), b.RequestEnd()); err != nil {
		t.Fatal(err)
	}
	rd, err := ReadRequestTrace(&buf, false)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Records[0].FinishReason != "tool_calls" || rd.Records[1].FinishReason != "" || rd.Records[1].Timestamp != 4000 {
		t.Fatalf("records %+v", rd.Records)
	}
}

func TestIsRequestTraceTellsMooncake(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"timestamp":0,"input_length":1024,"output_length":10,"hash_ids":[1,2]}` + "\n", false},
		{"\n\n" + `{"timestamp":5,"event":{"schema":"dynamo.request.trace.v1","event_type":"tool_start"` + strings.Repeat(" ", 100<<10) + "}}\n", true},
		{`{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1}` + "\n", true},
	} {
		got, _, err := IsRequestTrace(strings.NewReader(c.in))
		if err != nil || got != c.want {
			t.Errorf("%.60q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

func TestReadRequestTraceBadLines(t *testing.T) {
	good, _ := dynamotrace.Marshal(dynamotrace.Turn{RequestID: "r", Session: "s", Prompt: make([]uint32, 40), BlockSize: 16}.RequestEnd())
	in := string(good) + "\n" + `{"schema":"dynamo.request.trace.v9","event_type":"request_end","event_time_unix_ms":1}` + "\n"
	_, err := ReadRequestTrace(strings.NewReader(in), false)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(le.Reason, "unsupported schema") {
		t.Fatalf("bad line: %v", err)
	}
	rd, err := ReadRequestTrace(strings.NewReader(in), true)
	if err != nil || rd.Skipped != 1 || len(rd.Records) != 1 {
		t.Fatalf("skip-bad: %v %+v", err, rd)
	}
	if _, err := ReadRequestTrace(strings.NewReader(string(dynamotraceTool(t))), false); !errors.Is(err, ErrNoRequests) {
		t.Fatalf("tool records only: %v", err)
	}
}

func dynamotraceTool(t *testing.T) []byte {
	b, err := dynamotrace.Marshal(dynamotrace.Tool("tool_end", "s", "c", "x", 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
