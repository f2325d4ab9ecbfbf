package agents

// Hostile input on the agent tracker (issue 35). FIGURE lines feed
// docs/reliability.md.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
	"github.com/tinylib/msgp/msgp"
)

// TestHostileMillionSessions: 10^6 distinct agent programs, and as many
// sessions with engine prefetches pending, keep both tables at
// MaxPrograms, each eviction counted. The loop is the tracker's own
// ObserveRequest and Prefetched, with no bus, so 10^6 stays quick.
func TestHostileMillionSessions(t *testing.T) {
	n := 1_000_000
	if raceEnabled {
		n = 200_000 // the same loop, a fifth of it: -race costs ~10x here
	}
	cfg := DefaultConfig()
	tr, w, _ := newTracker(t, cfg)
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		tr.ObserveRequest(agentReq(id, "wt", fmt.Sprintf("p%d", i), false))
		tr.Prefetched(&schemas.RequestEvent{RequestID: "wake-" + id, SessionID: fmt.Sprintf("s%d", i), TokenIDs: []uint32{1, 2, 3}},
			7, 0, w.now.Add(time.Minute))
	}
	took := time.Since(start)
	ev := tr.Evicted()
	want := uint64(n - cfg.MaxPrograms)
	if tr.Programs() != cfg.MaxPrograms || tr.Sessions() != cfg.MaxPrograms || ev.Programs != want || ev.Sessions != want {
		t.Fatalf("programs %d, sessions %d, evicted %+v; want %d each and %d evicted", tr.Programs(), tr.Sessions(), ev, cfg.MaxPrograms, want)
	}
	// Each evicted session had a prefetch pending: settled expired.
	if got := len(tr.Recent()); got != cfg.Recent {
		t.Fatalf("recent %d, want the ring's %d", got, cfg.Recent)
	}
	t.Logf("FIGURE %d distinct programs and sessions: %d of each kept (MaxPrograms), %d programs and %d sessions evicted and counted; %.1f µs a program",
		n, cfg.MaxPrograms, ev.Programs, ev.Sessions, float64(took.Microseconds())/float64(n))
}

// TestHostileUnpairedToolEvents: tool_starts that never end, for 4,096
// programs, each cost O(1) (not a sweep of every program), and their
// pins lapse on the clock; tool_ends without a start create nothing;
// 10,000 distinct tool classes keep the learner at its bound.
func TestHostileUnpairedToolEvents(t *testing.T) {
	cfg := DefaultConfig()
	tr, w, m := newTracker(t, cfg)
	ctx := context.Background()
	for i := range cfg.MaxPrograms {
		p := fmt.Sprintf("p%d", i)
		tr.ObserveRequest(agentReq("r-"+p, "wt", p, false))
		tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "r-" + p, WorkerID: 7, OutputTokenIDs: []uint32{9}})
	}
	start := time.Now()
	for i := range cfg.MaxPrograms {
		p := fmt.Sprintf("p%d", i)
		tr.OnRecord(ctx, toolRec(agentevents.ToolStart, "wt", p, "c-"+p, "bash", w.now.UnixMilli(), 0))
	}
	per := time.Since(start) / time.Duration(cfg.MaxPrograms)
	// A sweep of every program per tool_start took 62 µs here (817 µs
	// under -race); O(1) takes 1-8 µs. The bound is loose for busy CI.
	if per > 200*time.Microsecond {
		t.Fatalf("a tool_start at %d programs took %v: a sweep of every program?", cfg.MaxPrograms, per)
	}
	if got := m.Hints.Value(KindToolStartPin); got != uint64(cfg.MaxPrograms) {
		t.Fatalf("%d tool_start pins, want %d", got, cfg.MaxPrograms)
	}
	// No tool_end: past the pin TTL every pin lapses on the clock.
	w.now = w.now.Add(w.pinTTL + time.Second)
	tr.Tick()
	if got := m.OutcomeValues()["pin/"+OutcomeLapsed]; got != uint64(cfg.MaxPrograms) {
		t.Fatalf("%d pins lapsed, want %d", got, cfg.MaxPrograms)
	}

	// tool_end for programs never seen, 10,000 tool classes.
	const ends = 10_000
	for i := range ends {
		tr.OnRecord(ctx, toolRec(agentevents.ToolEnd, "wt", fmt.Sprintf("ghost-%d", i), "c", fmt.Sprintf("class-%d", i), w.now.UnixMilli(), 1500))
	}
	if tr.Programs() != cfg.MaxPrograms || tr.Evicted().Programs != 0 {
		t.Fatalf("programs %d, evicted %d: a tool_end without a start made a program", tr.Programs(), tr.Evicted().Programs)
	}
	if n := len(tr.Learner().Snapshot()); n > tooltime.DefaultMaxTools+1 {
		t.Fatalf("learner tracks %d classes, bound %d", n, tooltime.DefaultMaxTools+1)
	}
	t.Logf("FIGURE unpaired tool events: %d tool_starts without an end at %d programs, %v each, all %d pins lapsed on the clock; %d tool_ends without a start made 0 programs, learner at %d classes (bound %d)",
		cfg.MaxPrograms, cfg.MaxPrograms, per, cfg.MaxPrograms, ends, len(tr.Learner().Snapshot()), tooltime.DefaultMaxTools+1)
}

// TestHostileNvExt: hostile agent_context and agent_hints on requests,
// in JSON and msgpack, are refused by the decoder with a DecodeError (a
// reason the consumer counts); what is accepted is within bounds and the
// tracker follows it without panicking.
func TestHostileNvExt(t *testing.T) {
	huge := strings.Repeat("w", 10<<20)
	ctxJSON := func(v string) []byte {
		return []byte(`{"request_id":"r","token_ids":[1,2],"nvext":{"agent_context":` + v + `}}`)
	}
	hintsJSON := func(v string) []byte {
		return []byte(`{"request_id":"r","token_ids":[1,2],"nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"},"agent_hints":` + v + `}}`)
	}
	okCtx := map[string]any{"workflow_type_id": "t", "workflow_id": "w", "program_id": "p"}
	mp := func(nvext map[string]any) []byte {
		b, err := msgp.AppendIntf(nil, map[string]any{"request_id": "r", "token_ids": []any{1, 2}, "nvext": nvext})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	refused := []struct {
		name string
		data []byte
		ct   string
	}{
		{"10 MiB workflow_id", ctxJSON(`{"workflow_type_id":"t","workflow_id":"` + huge + `","program_id":"p"}`), "application/json"},
		{"2 KiB program_id", ctxJSON(`{"workflow_type_id":"t","workflow_id":"w","program_id":"` + strings.Repeat("p", 2048) + `"}`), "application/json"},
		{"program_id a number", ctxJSON(`{"workflow_type_id":"t","workflow_id":"w","program_id":7}`), "application/json"},
		{"agent_context a string", ctxJSON(`"w/p"`), "application/json"},
		{"agent_context an array", ctxJSON(`[1,2,3]`), "application/json"},
		{"missing program_id", ctxJSON(`{"workflow_type_id":"t","workflow_id":"w"}`), "application/json"},
		{"empty workflow_id", ctxJSON(`{"workflow_type_id":"t","workflow_id":"","program_id":"p"}`), "application/json"},
		{"invalid UTF-8", ctxJSON("{\"workflow_type_id\":\"t\",\"workflow_id\":\"\xff\xfe\",\"program_id\":\"p\"}"), "application/json"},
		{"priority 1e12", hintsJSON(`{"priority":1000000000000}`), "application/json"},
		{"priority 1.5", hintsJSON(`{"priority":1.5}`), "application/json"},
		{"osl negative", hintsJSON(`{"osl":-5}`), "application/json"},
		{"strict_priority a string", hintsJSON(`{"strict_priority":"high"}`), "application/json"},
		{"speculative_prefill a string", hintsJSON(`{"speculative_prefill":"yes"}`), "application/json"},
		{"agent_hints a number", hintsJSON(`42`), "application/json"},
		{"msgpack osl NaN", mp(map[string]any{"agent_context": okCtx, "agent_hints": map[string]any{"osl": math.NaN()}}), "application/msgpack"},
		{"msgpack priority +Inf", mp(map[string]any{"agent_context": okCtx, "agent_hints": map[string]any{"priority": math.Inf(1)}}), "application/msgpack"},
		{"msgpack priority -2^40", mp(map[string]any{"agent_context": okCtx, "agent_hints": map[string]any{"priority": int64(-1) << 40}}), "application/msgpack"},
		{"msgpack workflow_id bin", mp(map[string]any{"agent_context": map[string]any{"workflow_type_id": "t", "workflow_id": []byte("w"), "program_id": "p"}}), "application/msgpack"},
		{"msgpack 10 MiB workflow_id", mp(map[string]any{"agent_context": map[string]any{"workflow_type_id": "t", "workflow_id": huge, "program_id": "p"}}), "application/msgpack"},
	}
	reasons := map[string]int{}
	nRefused := 0
	for _, c := range refused {
		_, err := schemas.DecodeRequest(c.data, c.ct)
		var de *schemas.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, schemas.ErrMalformed) {
			t.Errorf("%s: err %v, want a DecodeError", c.name, err)
			continue
		}
		reasons[de.Reason]++
		nRefused++
	}
	// Accepted: Dynamo's ranges, negative priority included (i32).
	tr, _, _ := newTracker(t, DefaultConfig())
	for _, data := range [][]byte{
		hintsJSON(`{"priority":-2147483648,"strict_priority":4294967295,"osl":0,"speculative_prefill":true}`),
		hintsJSON(`{"unknown":{"deep":[1,2,3]}}`),
		ctxJSON(`{"workflow_type_id":"t","workflow_id":"w","program_id":"p","parent_program_id":"` + strings.Repeat("q", 1024) + `"}`),
	} {
		req, err := schemas.DecodeRequest(data, "application/json")
		if err != nil {
			t.Fatalf("%s: %v", data[:min(len(data), 120)], err)
		}
		if c := req.NvExt.Context(); c == nil || len(schemas.AgentSession(c)) > 2*schemas.DefaultMaxAgentID+1 {
			t.Fatalf("accepted context out of bounds: %+v", c)
		}
		tr.ObserveRequest(req)
	}
	if tr.Programs() != 1 {
		t.Fatalf("programs %d, want 1 (w/p)", tr.Programs())
	}
	t.Logf("FIGURE hostile nvext: %d of %d refused with a DecodeError, %d reasons %v; Dynamo's extreme valid values accepted and followed",
		nRefused, len(refused), len(reasons), reasons)
}

// FuzzTrackerApply: any stored bytes given to the tracker as a tool
// record are followed or refused with a counted DecodeError; never a
// panic, never a program past MaxPrograms.
func FuzzTrackerApply(f *testing.F) {
	rec := func(event string, extra string) []byte {
		return []byte(`{"schema":"dynamo.agent.trace.v1","event_type":"` + event + `","event_time_unix_ms":1777000000000,"event_source":"harness",` +
			`"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"},"tool":{"tool_call_id":"c","tool_class":"bash"` + extra + `}}`)
	}
	f.Add(rec(agentevents.ToolStart, ""), "application/json")
	f.Add(rec(agentevents.ToolEnd, `,"duration_ms":1e308`), "application/json")
	f.Add(rec(agentevents.ToolEnd, `,"started_at_unix_ms":18446744073709551615,"ended_at_unix_ms":1`), "application/json")
	f.Add([]byte{0x81, 0xa6, 's', 'c', 'h', 'e', 'm', 'a', 0xc0}, "application/msgpack")
	f.Add([]byte{0xc1}, "")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		cfg := DefaultConfig()
		cfg.MaxPrograms = 2
		tr, w, m := newTracker(t, cfg)
		tr.ObserveRequest(agentReq("r", "t", "p", true))
		tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "r", WorkerID: 7, OutputTokenIDs: []uint32{5}})
		for range 2 {
			msg := engineMessage(data, ct)
			if err := tr.Apply(msg); err != nil {
				if !errors.Is(err, schemas.ErrMalformed) || m.Malformed.Total() == 0 {
					t.Fatalf("error %v not a counted DecodeError", err)
				}
			}
			w.now = w.now.Add(time.Hour)
			tr.Tick()
		}
		if tr.Programs() > cfg.MaxPrograms {
			t.Fatalf("%d programs past the bound %d", tr.Programs(), cfg.MaxPrograms)
		}
	})
}

func engineMessage(data []byte, ct string) engine.Message {
	h := nats.Header{}
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	return engine.Message{Subject: "agent.events.w", Header: h, Data: data}
}
