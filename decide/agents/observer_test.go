package agents

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// spyObserver keeps the responses an engine hands its observers, and
// the ids of the requests (a request is reused once observed).
type spyObserver struct {
	reqs  []string
	resps []*schemas.ResponseEvent
}

func (s *spyObserver) ObserveRequest(_ context.Context, r engine.ObservedRequest) {
	s.reqs = append(s.reqs, r.Event.RequestID)
}

func (s *spyObserver) ObserveResponse(_ context.Context, r engine.ObservedResponse) {
	s.resps = append(s.resps, r.Event)
}

// countObserver counts what it is told, keeping nothing.
type countObserver struct{ n int }

func (c *countObserver) ObserveRequest(context.Context, engine.ObservedRequest)   { c.n++ }
func (c *countObserver) ObserveResponse(context.Context, engine.ObservedResponse) { c.n++ }

func observedEngine(t testing.TB, observers ...engine.Observer) *engine.Engine {
	t.Helper()
	e, err := engine.NewEngine(engine.Decisions{NoPinRenewal: true}, engine.EngineDeps{Index: index.New(),
		Sender: actions.NewRecorder(nil, nil), Observers: observers})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTrackerObservesTheEnginesDecode: under --agents each request and
// response is decoded once, by the engine. The tracker, one of its
// observers, is handed the very event the engine decoded (the pointer
// another observer is handed: a response that came before its request is
// kept by the tracker as it was given), and observers make Engine.Request
// allocate nothing more (a second decode would allocate a request).
func TestTrackerObservesTheEnginesDecode(t *testing.T) {
	tr, _, _ := newTracker(t, DefaultConfig())
	spy := &spyObserver{}
	eng := observedEngine(t, spy, tr.Observer())
	ctx := context.Background()
	d := engine.Delivery{Delivered: 1, Time: time.UnixMilli(1_777_000_000_000)}
	agent := `"nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"}}`
	resp := engine.Message{Subject: "llm.responses.m", Data: []byte(`{"request_id":"a-1","worker_id":7,` + agent + `}`)}
	if out := eng.Response(ctx, d, resp); out.Verdict != engine.Ack {
		t.Fatalf("response: %v %v", out.Verdict, out.Err)
	}
	if len(spy.resps) != 1 || tr.early["a-1"] == nil || tr.early["a-1"] != spy.resps[0] {
		t.Fatalf("the tracker holds %p, the engine decoded %v", tr.early["a-1"], spy.resps)
	}
	req := engine.Message{Subject: "llm.requests.m", Data: []byte(`{"request_id":"a-1","model":"m","token_ids":[1,2,3,4],` + agent + `}`)}
	if out := eng.Request(ctx, d, req); out.Verdict != engine.Ack {
		t.Fatalf("request: %v %v", out.Verdict, out.Err)
	}
	if len(spy.reqs) != 1 || spy.reqs[0] != "a-1" || tr.Programs() != 1 || len(tr.early) != 0 {
		t.Fatalf("the tracker did not follow the engine's request: %d requests seen, %d programs, %d early",
			len(spy.reqs), tr.Programs(), len(tr.early))
	}

	plain := engine.Message{Subject: "llm.requests.m", Data: []byte(`{"request_id":"b","model":"m","token_ids":[1,2,3,4]}`)}
	allocs := func(e *engine.Engine) float64 {
		return testing.AllocsPerRun(100, func() { e.Request(ctx, d, plain) })
	}
	count := &countObserver{}
	bare, observed := allocs(observedEngine(t)), allocs(observedEngine(t, count, tr.Observer()))
	if count.n == 0 || observed > bare {
		t.Fatalf("Engine.Request allocates %.1f times with observers, %.1f without (observers told %d times)",
			observed, bare, count.n)
	}
}
