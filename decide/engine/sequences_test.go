package engine

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// sentHints keeps every hint handed to it, decoded, and settles it.
type sentHints struct {
	mu    sync.Mutex
	hints []sentHint
}

type sentHint struct {
	endpoint string
	action   string
	prefetch schemas.PrefetchPayload
	pin      schemas.PinPayload
}

func (s *sentHints) Send(endpoint string, h actions.Hint) error {
	var env schemas.KvHintsEnvelope
	if _, err := env.UnmarshalMsg(h.Body); err != nil {
		return err
	}
	got := sentHint{endpoint: endpoint, action: env.Actions[0].ActionType}
	var err error
	switch got.action {
	case actions.ActionPrefetch:
		_, err = got.prefetch.UnmarshalMsg(env.Actions[0].Payload)
	case actions.ActionPin:
		_, err = got.pin.UnmarshalMsg(env.Actions[0].Payload)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.hints = append(s.hints, got)
	s.mu.Unlock()
	h.NotifyDone(true)
	return nil
}

func (s *sentHints) take() []sentHint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.hints
	s.hints = nil
	return out
}

type registry map[uint64]schemas.WorkerRecord

func (r registry) Workers() []schemas.WorkerRecord {
	out := make([]schemas.WorkerRecord, 0, len(r))
	for _, id := range slices.Sorted(func(yield func(uint64) bool) {
		for id := range r {
			if !yield(id) {
				return
			}
		}
	}) {
		out = append(out, r[id])
	}
	return out
}

func (r registry) Get(id uint64) (schemas.WorkerRecord, bool) { w, ok := r[id]; return w, ok }

// seqEngine is an engine over two registered workers of block size 16,
// worker 1 holding blocks 0-3 of a 6-block prompt and worker 2 blocks 0-5
// (engine hashes 100+i and 200+i), with pins on.
func seqEngine(t *testing.T) (*Engine, *sentHints, *metrics.Families, []uint64) {
	t.Helper()
	local, seq := func() ([]uint64, []uint64) {
		tokens := make([]uint32, 6*16+5)
		for i := range tokens {
			tokens[i] = uint32(i*31 + 7)
		}
		return kvevents.LocalBlockHashes(tokens, 16), kvevents.PromptHashes(tokens, 16)
	}()
	ix := index.New()
	for w, n := range map[uint64]int{1: 4, 2: 6} {
		ev := kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: w}, EventID: 1, Kind: schemas.KindStored}
		for i := range n {
			ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: w*100 + uint64(i), LocalHash: local[i]})
		}
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry{
		1: {WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}},
		2: {WorkerID: 2, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:2"}},
	}
	sent := &sentHints{}
	c := metrics.New()
	e, err := NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: ix, Workers: reg, Sender: sent, Counters: c,
		Pins: &pins.Deps{Endpoint: "tcp://127.0.0.1:3", Index: &mapRequests{reqs: map[string]*schemas.RequestEvent{}},
			Slots: pins.NewMemSlots(), Workers: reg}})
	if err != nil {
		t.Fatal(err)
	}
	return e, sent, c, seq
}

// TestPrefetchBySequenceHashes: a wake-up known only by its sequence
// hashes is placed by overlap and prefetched with the engine block hashes
// the workers reported; a routed request (AddRequest) goes to the worker
// the router named, its pages continued from the worker holding more.
func TestPrefetchBySequenceHashes(t *testing.T) {
	e, sent, c, seq := seqEngine(t)
	ctx := context.Background()
	d := Delivery{Time: time.Now(), Delivered: 1}
	wake := &schemas.RequestEvent{RequestID: "w", Model: "m", SequenceHashes: seq, SequenceBlockSize: 16,
		Headers: map[string]string{schemas.HeaderWakeup: "1"}}
	if o := e.OnRequest(ctx, d, wake, false); o.Verdict != Held {
		t.Fatalf("wake-up by hashes: %+v", o)
	}
	hs := sent.take()
	if len(hs) != 1 || hs[0].endpoint != "tcp://127.0.0.1:2" {
		t.Fatalf("wake-up: %+v, want one prefetch to worker 2 (6 blocks held)", hs)
	}
	p := hs[0].prefetch
	if len(p.TokenIDs) != 0 || !slices.Equal(p.SequenceHashes, seq) || p.SequenceBlockSize != 16 ||
		!slices.Equal(p.BlockHashes, []uint64{200, 201, 202, 203, 204, 205}) || p.WorkerID != 2 {
		t.Errorf("prefetch payload %+v", p)
	}

	routed := &schemas.RequestEvent{RequestID: "r", Model: "m", SequenceHashes: seq, SequenceBlockSize: 16, WorkerID: 1}
	if o := e.OnRouted(ctx, d, routed); o.Verdict != Held {
		t.Fatalf("routed: %+v", o)
	}
	hs = sent.take()
	if len(hs) != 1 || hs[0].endpoint != "tcp://127.0.0.1:1" ||
		!slices.Equal(hs[0].prefetch.BlockHashes, []uint64{100, 101, 102, 103, 204, 205}) {
		t.Fatalf("routed to worker 1: %+v, want its own 4 pages then worker 2's", hs)
	}

	// Counted, never sent: an unknown worker, keyed hashes, unsalted
	// hashes of a salted request.
	for _, tc := range []struct {
		req    schemas.RequestEvent
		reason string
	}{
		{schemas.RequestEvent{RequestID: "u", Model: "m", SequenceHashes: seq, SequenceBlockSize: 16, WorkerID: 9}, "unknown_worker"},
		{schemas.RequestEvent{RequestID: "k", Model: "m", SequenceHashes: seq, SequenceBlockSize: 16,
			SequenceHashScheme: schemas.HashSchemeKeyed}, metrics.HashesKeyed},
		{schemas.RequestEvent{RequestID: "s", Model: "m", SequenceHashes: seq, SequenceBlockSize: 16,
			SequenceHashScheme: schemas.HashSchemeUnsalted, CacheSalt: "tenant"}, metrics.HashesUnsalted},
	} {
		before := c.HintsPrefetchSkipped.With(tc.reason).Value()
		if o := e.OnRouted(ctx, d, &tc.req); o.Verdict != Ack {
			t.Errorf("%s: %+v", tc.reason, o)
		}
		if got := c.HintsPrefetchSkipped.With(tc.reason).Value(); got != before+1 {
			t.Errorf("%s: skipped counter %d, want %d", tc.reason, got, before+1)
		}
	}
	if hs := sent.take(); len(hs) != 0 {
		t.Errorf("hints sent for refused requests: %+v", hs)
	}
}

// TestPinBySequenceHashes: a tool-call response carrying its prompt's
// sequence hashes (Dynamo's request_end) is pinned with no request
// indexed, by the serving worker's engine block hashes; what cannot be
// the worker's pages is counted by reason and never pinned.
func TestPinBySequenceHashes(t *testing.T) {
	e, sent, c, seq := seqEngine(t)
	ctx := context.Background()
	d := Delivery{Time: time.Now(), Delivered: 1}
	traced := append(slices.Clone(seq), 12345) // Dynamo's partial tail, not dropped by the source here
	resp := &schemas.ResponseEvent{RequestID: "t", SessionID: "s", Model: "m", WorkerID: 1, FinishReason: "tool_calls",
		ToolCalls: []schemas.ToolCall{{Name: "search"}}, SequenceHashes: traced, SequenceBlockSize: 16}
	if o := e.OnResponse(ctx, d, resp); o.Verdict != Held {
		t.Fatalf("tool call by hashes: %+v", o)
	}
	hs := sent.take()
	if len(hs) != 1 || hs[0].action != actions.ActionPin || hs[0].endpoint != "tcp://127.0.0.1:3" {
		t.Fatalf("want one pin, got %+v", hs)
	}
	pin := hs[0].pin
	if !slices.Equal(pin.BlockHashes, []uint64{100, 101, 102, 103}) || pin.WorkerID != 1 || len(pin.Keys) != 0 ||
		pin.Slot != "session:s" || pin.Tokens != 64 || pin.TTLMs <= 0 {
		t.Errorf("pin payload %+v", pin)
	}
	for _, tc := range []struct {
		edit   func(r *schemas.ResponseEvent)
		reason string
	}{
		{func(r *schemas.ResponseEvent) { r.WorkerID = 9 }, "unknown_worker"},
		{func(r *schemas.ResponseEvent) { r.SequenceHashScheme = schemas.HashSchemeKeyed }, metrics.HashesKeyed},
		{func(r *schemas.ResponseEvent) { r.SequenceHashScheme, r.LoraName = schemas.HashSchemeUnsalted, "a" }, metrics.HashesUnsalted},
		{func(r *schemas.ResponseEvent) { r.SequenceHashes = []uint64{1, 2} }, "no_pages"},
		{func(r *schemas.ResponseEvent) { r.SequenceBlockSize = 32 }, "no_pages"},
	} {
		r := *resp
		r.RequestID = "t-" + tc.reason
		tc.edit(&r)
		before := c.HintsPinSkipped.With(tc.reason).Value()
		if o := e.OnResponse(ctx, d, &r); o.Verdict != Ack {
			t.Errorf("%s: %+v", tc.reason, o)
		}
		if got := c.HintsPinSkipped.With(tc.reason).Value(); got != before+1 {
			t.Errorf("%s: skipped counter %d, want %d", tc.reason, got, before+1)
		}
	}
	// Unsalted hashes of a request with neither adapter nor salt are the
	// router's: pinned.
	r := *resp
	r.RequestID, r.SequenceHashScheme = "t-plain", schemas.HashSchemeUnsalted
	if o := e.OnResponse(ctx, d, &r); o.Verdict != Held {
		t.Errorf("unsalted, unsalted request: %+v", o)
	}
	if hs := sent.take(); len(hs) != 1 {
		t.Errorf("want only the plain unsalted pin, got %d hints", len(hs))
	}
}

// TestRoutedAddRequest: a KV router's AddRequest frame (made by the
// independent Python builder, ingest/eventplane/testdata) prefetches to
// the worker it names, its blocks named by the engine hashes that
// worker's KV events gave; a frame naming a worker the registry does not
// list is counted and refused with its reason, to be dead-lettered.
func TestRoutedAddRequest(t *testing.T) {
	frame, err := os.ReadFile("../../ingest/eventplane/testdata/seq_add_nats.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	const subject = "namespace.dynamo.component.backend.endpoint.generate.active_sequences_events"
	tokens := make([]uint32, 48)
	for i := range tokens {
		tokens[i] = uint32(2000 + i)
	}
	ix := index.New()
	ev := kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: 7}, EventID: 1, Kind: schemas.KindStored}
	for i, h := range kvevents.LocalBlockHashes(tokens, 16) {
		ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: 70 + uint64(i), LocalHash: h})
	}
	if err := ix.Apply(ev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		reg     registry
		verdict Verdict
	}{
		{"registered", registry{7: {WorkerID: 7, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:7"}}}, Ack},
		{"unknown", registry{8: {WorkerID: 8, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:8"}}}, Reject},
	} {
		sent := &sentHints{}
		c := metrics.New()
		// The frame's publisher stamped it in 2025: the engine's clock is
		// the frame's, or its prefetch would have expired.
		at := time.UnixMilli(1764547200000 + 100)
		e, err := NewEngine(Decisions{}, EngineDeps{Index: ix, Workers: tc.reg, Sender: sent, Counters: c,
			Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		// Through Request: the request stream carries the routers' frames.
		o := e.Request(context.Background(), Delivery{Time: at, Delivered: 1},
			Message{Subject: subject, Data: frame})
		if o.Verdict != tc.verdict {
			t.Fatalf("%s: %+v, want verdict %v", tc.name, o, tc.verdict)
		}
		hs := sent.take()
		if tc.verdict == Reject {
			if o.Reason() != metrics.ReasonUnknownWorker || len(hs) != 0 ||
				c.HintsPrefetchSkipped.With("unknown_worker").Value() != 1 {
				t.Errorf("unknown worker: reason %q, %d hints, skipped %d", o.Reason(), len(hs),
					c.HintsPrefetchSkipped.With("unknown_worker").Value())
			}
			continue
		}
		if len(hs) != 1 || hs[0].prefetch.RequestID != "req-1" || hs[0].endpoint != "tcp://127.0.0.1:7" ||
			!slices.Equal(hs[0].prefetch.BlockHashes, []uint64{70, 71, 72}) || hs[0].prefetch.SequenceBlockSize != 16 {
			t.Errorf("registered: %+v", hs)
		}
	}
}
