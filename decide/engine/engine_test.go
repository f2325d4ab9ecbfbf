package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

type workers []schemas.WorkerRecord

func (w workers) Workers() []schemas.WorkerRecord { return w }

// mapRequests is an in-memory pins.RequestStore (as a replay's).
type mapRequests struct {
	mu   sync.Mutex
	reqs map[string]*schemas.RequestEvent
}

func (m *mapRequests) Put(_ context.Context, req *schemas.RequestEvent, _ pins.IndexEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs[req.RequestID] = req
	return nil
}

func (m *mapRequests) Entry(_ context.Context, id string) (pins.IndexEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.reqs[id]; !ok {
		return pins.IndexEntry{}, pins.ErrRequestNotFound
	}
	return pins.IndexEntry{}, nil
}

func (m *mapRequests) Request(_ context.Context, id string, _ pins.IndexEntry) (*schemas.RequestEvent, error) {
	return nil, pins.ErrRequestNotFound
}

// TestEngineOutcomes drives the engine without any transport: bytes in,
// an Outcome out, the hint in a recorder.
func TestEngineOutcomes(t *testing.T) {
	var out bytes.Buffer
	ctx := context.Background()
	now := time.Now()
	e, err := NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: index.New(),
		Workers: workers{{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:9"}}},
		Sender:  actions.NewRecorder(&out, nil), RetryDelay: 42 * time.Millisecond,
		Pins:  &pins.Deps{Endpoint: "tcp://127.0.0.1:8", Index: &mapRequests{reqs: map[string]*schemas.RequestEvent{}}},
		Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	d := Delivery{Seq: 1, Time: now, Delivered: 1}
	msg := func(body string) Message { return Message{Subject: "llm.requests.m", Data: []byte(body)} }

	if o := e.Request(ctx, d, msg(`{"request_id":"plain","model":"m","token_ids":[1]}`)); o.Verdict != Ack {
		t.Fatalf("plain request: %+v", o)
	}
	if o := e.Request(ctx, d, msg(`{"request_id":`)); o.Verdict != Reject || !errors.Is(o.Err, schemas.ErrMalformed) {
		t.Fatalf("truncated request: %+v", o)
	}
	var settled bool
	d.Done = func(sent bool) { settled = sent }
	o := e.Request(ctx, d, msg(`{"request_id":"wake","model":"m","token_ids":[1,2],"headers":{"x-dynamo-experimental-wakeup":"1"}}`))
	if o.Verdict != Held || !settled || !strings.Contains(out.String(), `"wake"`) {
		t.Fatalf("wake-up: %+v, settled %v, recorded %q", o, settled, out.String())
	}
	// A tool-call response whose request was never indexed: retried while
	// the delivery count allows, then given up on (acked).
	resp := Message{Subject: "llm.responses.m", Data: []byte(`{"request_id":"missing","worker_id":1,"finish_reason":"tool_calls"}`)}
	if o := e.Response(ctx, Delivery{Time: now, Delivered: 1}, resp); o.Verdict != Retry || o.RetryAfter != 42*time.Millisecond {
		t.Fatalf("response before its request: %+v", o)
	}
	if o := e.Response(ctx, Delivery{Time: now, Delivered: 5}, resp); o.Verdict != Ack {
		t.Fatalf("fifth delivery: %+v", o)
	}
	if o := e.Response(ctx, Delivery{Unknown: errors.New("no metadata"), Delivered: 1}, resp); o.Verdict != Ack {
		t.Fatalf("unknown delivery: %+v", o)
	}
	if _, err := NewEngine(Decisions{}, EngineDeps{}); !errors.Is(err, ErrEngineDeps) {
		t.Fatalf("no index: %v, want ErrEngineDeps", err)
	}
}
