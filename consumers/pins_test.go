package consumers

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"io"
	"log/slog"
	"testing"
	"time"

	"fmt"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

type workerMap map[uint64]schemas.WorkerRecord

func (w workerMap) Get(id uint64) (schemas.WorkerRecord, bool) { r, ok := w[id]; return r, ok }

// pinSink stands in for the Mooncake master and collects the pin
// payloads it receives.
func pinSink(t *testing.T) (string, <-chan schemas.PinPayload) { return zmqtest.PinSink(t) }

type pinFixture struct {
	js       jetstream.JetStream
	counters *metrics.Families
	pins     <-chan schemas.PinPayload
}

func setupPins(t *testing.T, workers workerMap, mods ...func(*pins.Pinning)) *pinFixture {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	ep, sink := pinSink(t)
	f := &pinFixture{js: js, counters: metrics.New(), pins: sink}
	idx, err := pins.OpenRequestIndex(ctx, js, "", set.Requests.Name, time.Hour, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	slots, err := pins.OpenPinSlots(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = pool.Close(cctx)
	})
	dlq := NewDeadLetter(js, "")
	var recs staticWorkers
	for _, w := range workers {
		recs = append(recs, w)
	}
	eng := testEngine(t, engine.Decisions{}, engine.EngineDeps{Workers: recs, Sender: pool, Counters: f.counters,
		Log: discard(), RetryDelay: 20 * time.Millisecond,
		Pins: &pins.Deps{Endpoint: ep, Index: idx, Slots: slots, Workers: workers}})
	for _, m := range mods {
		m(eng.Pins())
	}
	reqs := NewRequestConsumer(js, RequestConfig{Stream: set.Requests.Name}, eng.Request, dlq, f.counters, discard())
	resps := NewResponseConsumer(js, ResponseConfig{Stream: set.Responses.Name}, eng.Response, dlq, f.counters, discard())
	for _, start := range []func(context.Context) error{reqs.Start, resps.Start} {
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(reqs.Stop)
	t.Cleanup(resps.Stop)
	return f
}

func (f *pinFixture) pub(t *testing.T, subject string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := f.js.Publish(context.Background(), subject, b); err != nil {
		t.Fatal(err)
	}
}

func (f *pinFixture) settled(t *testing.T, stream, durable string) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, func() bool {
		c, err := f.js.Consumer(context.Background(), stream, durable)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Consumer > 0
	}, "%s settled", durable)
}

func layout16() *schemas.ObjectLayout {
	return &schemas.ObjectLayout{PageSize: 16, HicacheObjectLayout: schemas.HicacheObjectLayout{KeyPrefix: "p",
		Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_k", "_v"}, HitPolicy: "all_pages"}}}}
}

func TestPinSkipsAreCountedAndAcked(t *testing.T) {
	f := setupPins(t, workerMap{
		1: {WorkerID: 1, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}},
		2: {WorkerID: 2, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}, ObjectLayout: layout16()},
	})
	prompt := make([]uint32, 40)
	tool := []schemas.ToolCall{{Name: "search"}}
	for _, id := range []string{"r-nolayout", "r-unknown", "r-plain", "r-ok"} {
		f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: id, SessionID: id, TokenIDs: prompt})
	}
	f.settled(t, "LLM_REQUESTS", "hintstream-requests")
	f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "r-nolayout", WorkerID: 1, ToolCalls: tool})
	f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "r-unknown", WorkerID: 9, FinishReason: "tool_calls"})
	f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "r-plain", WorkerID: 2, FinishReason: "stop"})
	f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "r-never-seen", WorkerID: 2, ToolCalls: tool})
	f.pub(t, streams.ResponseSubject("m"), []byte(`{"worker_id": "two"}`))
	f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "r-ok", WorkerID: 2, ToolCalls: tool,
		OutputTokenIDs: make([]uint32, 10)})
	select {
	case p := <-f.pins:
		// 50 tokens: 3 full pages of 16, 2 suffixes each.
		if p.Slot != "session:r-ok" || len(p.Keys) != 6 || p.Tokens != 48 || p.TTLMs != 50000 {
			t.Fatalf("pin %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pin for r-ok")
	}
	f.settled(t, "LLM_RESPONSES", "hintstream-responses")
	for name, want := range map[string]uint64{
		"hintstream_hints_pin_skipped_total|no_layout": 1, "hintstream_hints_pin_skipped_total|unknown_worker": 1,
		"hintstream_hints_pin_skipped_total|request_not_found": 1, "hintstream_responses_no_pin_total": 1, "hintstream_hints_pin_queued_total": 1,
		"hintstream_responses_retried_total": 4, "hintstream_responses_malformed_total": 1,
	} {
		if got := metricstest.Get(f.counters, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	select {
	case p := <-f.pins:
		t.Fatalf("unexpected pin %+v", p)
	default:
	}
}

// A second tool call in a session (two requests in flight, then both
// responses) replaces the first pin in the slot; the next turn releases
// the slot once, and feeds the tool's learned time.
func TestNewerPinReplacesAndNextTurnReleases(t *testing.T) {
	f := setupPins(t, workerMap{2: {WorkerID: 2, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"},
		ObjectLayout: layout16()}})
	prompt := make([]uint32, 32)
	for _, id := range []string{"t1", "t2"} {
		f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: id, SessionID: "s", TokenIDs: prompt})
	}
	f.settled(t, "LLM_REQUESTS", "hintstream-requests")
	for i, id := range []string{"t1", "t2"} {
		f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: id, SessionID: "s", WorkerID: 2,
			ToolCalls: []schemas.ToolCall{{Name: "grep"}}, CompletedAtMs: time.Now().UnixMilli()})
		select {
		case p := <-f.pins:
			if p.Slot != "session:s" || p.TTLMs == 0 {
				t.Fatalf("pin %d: %+v", i, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no pin for %s", id)
		}
		f.settled(t, "LLM_RESPONSES", "hintstream-responses")
	}
	// The wake-up ahead of turn t3 leaves the pin alone and observes no
	// tool time: its prefetch may go to another worker than t3 itself.
	f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "t3-wake", SessionID: "s", TokenIDs: prompt,
		ReceivedAtMs: time.Now().UnixMilli(), Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
	f.settled(t, "LLM_REQUESTS", "hintstream-requests")
	select {
	case p := <-f.pins:
		t.Fatalf("the wake-up released or replaced the pin: %+v", p)
	default:
	}
	if n := f.counters.ToolObserved.Value("grep"); n != 0 {
		t.Fatalf("the wake-up observed a tool time (%d)", n)
	}
	f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "t3", SessionID: "s", TokenIDs: prompt,
		ReceivedAtMs: time.Now().UnixMilli()})
	select {
	case p := <-f.pins:
		if p.Slot != "session:s" || p.TTLMs != 0 || len(p.Keys) != 0 {
			t.Fatalf("release %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no release on the next turn")
	}
	f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "t4", SessionID: "s", TokenIDs: prompt})
	f.settled(t, "LLM_REQUESTS", "hintstream-requests")
	select {
	case p := <-f.pins:
		t.Fatalf("a second release for one pin: %+v", p)
	default:
	}
	if f.counters.HintsReleaseQueued.Value() != 1 || f.counters.ToolObserved.Value("grep") != 1 {
		t.Fatalf("counters %v", metricstest.Snapshot(f.counters, ""))
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A full request index does not stall requests: they are acked
// unindexed (not redelivered) and counted.
func TestRequestIndexFullAcksUnindexed(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set, streams.WithLogger(discard())); err != nil {
		t.Fatal(err)
	}
	idx, err := pins.OpenRequestIndex(ctx, js, "", set.Requests.Name, time.Hour, schemas.Limits{}, pins.WithMaxBytes(2048))
	if err != nil {
		t.Fatal(err)
	}
	slots, err := pins.OpenPinSlots(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = pool.Close(cctx)
	})
	eng := testEngine(t, engine.Decisions{KeepPinOnNextTurn: true}, engine.EngineDeps{Workers: staticWorkers{},
		Sender: pool, Counters: counters, Log: discard(),
		Pins: &pins.Deps{Endpoint: "tcp://127.0.0.1:1", Index: idx, Slots: slots, Workers: workerMap{}}})
	reqs := NewRequestConsumer(js, RequestConfig{Stream: set.Requests.Name}, eng.Request, NewDeadLetter(js, ""), counters, discard())
	if err := reqs.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer reqs.Stop()
	const n = 200
	for i := range n {
		b, _ := json.Marshal(schemas.RequestEvent{RequestID: fmt.Sprintf("r-%d", i), SessionID: "s", TokenIDs: []uint32{1}})
		if _, err := js.Publish(ctx, streams.RequestSubject("m"), b); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return counters.RequestsPlain.Value() == n },
		"every request acked (%d)", counters.RequestsPlain.Value())
	if full := counters.PinsRequestIndexFull.Value(); full == 0 || full >= n {
		t.Fatalf("%d requests refused by a 2 KiB index, want some and not all", full)
	}
	if e := counters.RequestsTransientErrors.Value(); e != 0 {
		t.Fatalf("%d requests redelivered for a full index", e)
	}
}
