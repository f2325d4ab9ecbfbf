package workload

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// A small trace in Mooncake's format, block size 512:
//
//	0: blocks 1 2 | 3 (partial)            first turn
//	1: unrelated
//	2: 1 2 4 ...  holds 0 (1100+10 tokens)  next turn of 0
//	3: 1 2 5      too short for 2's prompt and output; 0 is taken: new
//	4: 1 2 4 9    longest full prefix [1 2]; latest free candidate is 3
const smallTrace = `{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}

{"timestamp": 3000, "input_length": 1200, "output_length": 5, "hash_ids": [1, 2, 4]}
{"timestamp": 3000, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 5]}
{"timestamp": 9000, "input_length": 2000, "output_length": 5, "hash_ids": [1, 2, 4, 9]}
`

func TestReadTraceFindsConversations(t *testing.T) {
	w, err := ReadTrace(strings.NewReader(smallTrace), TraceOptions{WakeupLead: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	prev := []int{}
	for _, r := range w.Requests {
		prev = append(prev, r.Prev)
	}
	if !slices.Equal(prev, []int{-1, -1, 0, -1, 3}) {
		t.Fatalf("previous turns %v, want [-1 -1 0 -1 3]", prev)
	}
	r0, r2 := w.Requests[0], w.Requests[2]
	if r2.Session != r0.Session || r2.Turn != 1 || w.Requests[4].Session != w.Requests[3].Session {
		t.Fatalf("sessions %q %q", r0.Session, r2.Session)
	}
	// A turn with a next turn ends in a tool call lasting until it.
	if !r0.ToolCall || r0.Next != 2 || r0.ToolTime != r2.At-r0.ResponseAt || w.Requests[2].ToolCall {
		t.Fatalf("tool call %+v", r0)
	}
	// Response: 1100 tokens at 20,000/s + 10 × 20 ms = 255 ms.
	if r0.ResponseAt != 255*time.Millisecond {
		t.Fatalf("response at %v", r0.ResponseAt)
	}
	if !r2.HasWakeup || r2.WakeupAt != 2500*time.Millisecond || r0.HasWakeup {
		t.Fatalf("wake-up %+v", r2)
	}
	// Events in time order, responses before wake-ups before requests.
	for i := 1; i < len(w.Events); i++ {
		a, b := w.Events[i-1], w.Events[i]
		if a.At > b.At || (a.At == b.At && a.Kind > b.Kind) {
			t.Fatalf("events out of order: %+v then %+v", a, b)
		}
	}
	if s := w.Stats(); s.Requests != 5 || s.Sessions != 3 || s.NextTurns != 2 || s.Wakeups != 2 || s.ToolCalls != 2 {
		t.Fatalf("stats %+v", s)
	}
	// Equal ids give equal tokens; the output is the next turn's tokens.
	p0, p2 := w.PromptTokens(0), w.PromptTokens(2)
	if len(p0) != 1100 || !slices.Equal(p0[:1024], p2[:1024]) || slices.Equal(p0[1024:1100], p2[1024:1100]) {
		t.Fatal("tokens must follow the block ids")
	}
	if !slices.Equal(w.OutputTokens(0), p2[1100:1110]) || len(w.OutputTokens(1)) != 5 {
		t.Fatal("output tokens")
	}
	if p0[5] != uint32(1*512+5) {
		t.Fatalf("token 5 of block 1 is %d", p0[5])
	}
	// The schema events.
	epoch := time.UnixMilli(1_000_000)
	wake := w.WakeupEvent(2, epoch)
	if wake.Headers[schemas.HeaderWakeup] != "1" || wake.RequestID != "wake-2" || wake.ReceivedAtMs != 1_002_500 || len(wake.TokenIDs) != 1200 {
		t.Fatalf("wake-up %+v", wake)
	}
	req := w.RequestEvent(0, epoch, true)
	if req.Headers[schemas.HeaderSimToolCall] != "2745" || req.SessionID != r0.Session {
		t.Fatalf("request headers %v", req.Headers)
	}
	resp := w.ResponseEvent(0, 3, epoch)
	if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 1 || resp.WorkerID != 3 || resp.CompletedAtMs != 1_000_255 {
		t.Fatalf("response %+v", resp)
	}
	// Skip and Limit cut the trace; a turn whose predecessor is cut
	// starts a conversation.
	w, err = ReadTrace(strings.NewReader(smallTrace), TraceOptions{Skip: 1, Limit: 2})
	if err != nil || len(w.Requests) != 2 || w.Requests[1].Prev != -1 || w.Requests[1].InputLength != 1200 {
		t.Fatalf("skip/limit: %+v %v", w, err)
	}
}

func TestReadTraceRejectsBadLines(t *testing.T) {
	for name, tc := range map[string]struct{ trace, want string }{
		"not json":       {`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}` + "\n" + `nope`, "trace line 2: not a JSON object"},
		"time goes back": {`{"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [1]}` + "\n" + `{"timestamp": 4, "input_length": 5, "output_length": 1, "hash_ids": [1]}`, "trace line 2: timestamp 4 before"},
		"too few ids":    {`{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}`, "trace line 1: 1 hash_ids cannot hold 600 tokens"},
		"no timestamp":   {`{"input_length": 5, "output_length": 1, "hash_ids": [1]}`, "trace line 1: no timestamp"},
		"negative":       {`{"timestamp": 0, "input_length": -5, "output_length": 1, "hash_ids": [1]}`, "trace line 1: negative length"},
		"no output":      {`{"timestamp": 0, "input_length": 5, "hash_ids": [1]}`, "trace line 1: no output_length"},
		"empty":          {"\n\n", "no usable request"},
	} {
		_, err := ReadTrace(strings.NewReader(tc.trace), TraceOptions{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestGenerateIsDeterministicBySeed(t *testing.T) {
	cfg := SyntheticConfig{Seed: 7, Sessions: 12}
	a, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed must give the same workload")
	}
	cfg.Seed = 8
	if c, _ := Generate(cfg); reflect.DeepEqual(a, c) {
		t.Fatal("another seed should give another workload")
	}
	s := a.Stats()
	if s.Sessions != 12 || s.Requests < 24 || s.Requests > 96 || s.Wakeups != s.NextTurns || s.ToolCalls == 0 {
		t.Fatalf("stats %+v", s)
	}
	sys := BlockTokens(0, 512, 512)
	for i, r := range a.Requests {
		p := a.PromptTokens(i)
		if !slices.Equal(p[:512], sys) {
			t.Fatal("every session opens with the shared system prompt")
		}
		if r.Next < 0 {
			continue
		}
		// A next turn holds the whole previous turn, output included.
		next := a.PromptTokens(r.Next)
		if len(next) != r.InputLength+r.OutputLength+1024 || !slices.Equal(next[:r.InputLength], p) ||
			!slices.Equal(next[r.InputLength:r.InputLength+r.OutputLength], a.OutputTokens(i)) {
			t.Fatalf("turn %d does not extend turn %d", r.Next, i)
		}
		nr := a.Requests[r.Next]
		if !nr.HasWakeup || nr.WakeupAt != max(nr.At-500*time.Millisecond, r.ResponseAt) || r.ResponseAt > nr.At {
			t.Fatalf("wake-up of %d: %+v", r.Next, nr)
		}
	}
	if _, err := Generate(SyntheticConfig{MinTurns: 5, MaxTurns: 2}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad turns: %v", err)
	}
}

func TestPublishSendsEveryEvent(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	w, err := ReadTrace(strings.NewReader(smallTrace), TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Publish(ctx, js, w, WithSpeed(0), WithWorkerOf(func(int) uint64 { return 4 }), WithWindow(2))
	if err != nil || st.Requests != 5 || st.Wakeups != 2 || st.Responses != 5 {
		t.Fatalf("stats %+v err %v", st, err)
	}
	reqs, _ := js.Stream(ctx, "LLM_REQUESTS")
	info, _ := reqs.Info(ctx)
	if info.State.Msgs != 7 {
		t.Fatalf("%d request events stored, want 7", info.State.Msgs)
	}
	m, err := reqs.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := schemas.Limits{}.DecodeRequest(m.Data, m.Header.Get("Content-Type"))
	if err != nil || ev.RequestID != "req-4" || len(ev.TokenIDs) != 2000 {
		t.Fatalf("last request %+v %v", ev, err)
	}
	resps, _ := js.Stream(ctx, "LLM_RESPONSES")
	m, err = resps.GetLastMsgForSubject(ctx, streams.ResponseSubject(w.Model))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := schemas.Limits{}.DecodeResponse(m.Data, m.Header.Get("Content-Type"))
	if err != nil || resp.WorkerID != 4 {
		t.Fatalf("response %+v %v", resp, err)
	}
	// Paced, 1000× faster than trace time: 9 s of trace in about 9 ms.
	st, err = Publish(ctx, js, w, WithSpeed(1000))
	if err != nil || st.Requests != 5 {
		t.Fatalf("paced: %+v %v", st, err)
	}
}

// promptRange is the slice of the prompt it stands for.
func TestPromptRange(t *testing.T) {
	w := &Workload{BlockSize: 4, Requests: []Request{{InputLength: 10, HashIDs: []uint64{7, 3, 9}}}}
	all := w.PromptTokens(0)
	for _, r := range [][2]int{{0, 10}, {3, 5}, {4, 8}, {9, 10}, {5, 5}} {
		got := w.promptRange(0, r[0], r[1])
		if len(got) != r[1]-r[0] {
			t.Fatalf("%v: %d tokens", r, len(got))
		}
		for k := range got {
			if got[k] != all[r[0]+k] {
				t.Fatalf("%v: token %d is %d, want %d", r, k, got[k], all[r[0]+k])
			}
		}
	}
}
