package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	zmq "github.com/pebbe/zmq4"
)

func push(t *testing.T, endpoint string, body []byte) {
	t.Helper()
	s, err := zmq.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetLinger(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(endpoint); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBytes(body, 0); err != nil {
		t.Fatal(err)
	}
}

func recvHint(t *testing.T, e *Endpoints) Hint {
	t.Helper()
	select {
	case h := <-e.Hints():
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("no hint within 10s")
	}
	return Hint{}
}

func TestEndpointsDecodeHintsFromRealSockets(t *testing.T) {
	e, err := Listen(2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.WorkerEndpoints()) != 2 || e.PinEndpoint() == "" {
		t.Fatalf("endpoints %v %q", e.WorkerEndpoints(), e.PinEndpoint())
	}
	env, err := actions.NewPrefetchEnvelope(actions.Prefetch{RequestID: "wake-1", SessionID: "s-1", Model: "m",
		TokenIDs: []uint32{1, 2, 3}, ExpiresAt: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	body, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	push(t, e.WorkerEndpoints()[1], body)
	h := recvHint(t, e)
	if h.Err != nil || h.Socket != 1 || len(h.Prefetches) != 1 || h.Prefetches[0].RequestID != "wake-1" ||
		len(h.Prefetches[0].TokenIDs) != 3 {
		t.Fatalf("prefetch hint %+v", h)
	}
	env, err = actions.NewPinEnvelope(actions.Pin{Trigger: "req-1", Slot: "session:s-1", Keys: []string{"k"},
		TTL: 1500 * time.Millisecond, Priority: 3, Tokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = actions.EncodeEnvelope(env)
	push(t, e.PinEndpoint(), body)
	h = recvHint(t, e)
	if h.Err != nil || h.Socket != PinSocket || len(h.Pins) != 1 || h.Pins[0].TTLMs != 1500 || h.Pins[0].Slot != "session:s-1" {
		t.Fatalf("pin hint %+v", h)
	}
	push(t, e.PinEndpoint(), []byte{0xc1, 0x00})
	if h = recvHint(t, e); h.Err == nil {
		t.Fatal("garbage must decode to an error, not a hint")
	}
	if e.Received() != 3 {
		t.Fatalf("received %d", e.Received())
	}
	e.Close()
	e.Close() // twice is fine
}

func TestJetStreamSinkAndRegistry(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	// The registry refuses inproc:// (the cluster's default): no other
	// process could serve it.
	c, err := NewCluster(Config{Workers: 2, BlockSize: 4, Sink: &JetStreamSink{Ctx: ctx, JS: js},
		Endpoints: []string{"tcp://127.0.0.1:5570", "tcp://127.0.0.1:5571"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, js, ""); err != nil {
		t.Fatal(err)
	}
	kv, _ := registry.Bucket(ctx, js, "")
	entry, err := kv.Get(ctx, registry.Key(2))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := schemas.Limits{}.DecodeWorkerRecord(entry.Value())
	if err != nil || rec.ObjectLayout == nil || rec.KvBlockSize != 4 {
		t.Fatalf("record %+v %v", rec, err)
	}
	p, _ := c.Prompt(tokensOf(0, 8))
	if _, err := c.Serve(1, p, 8, time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishLoads(); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, "KV_EVENTS")
	m, err := s.GetLastMsgForSubject(ctx, streams.KVEventSubject(2))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := schemas.Limits{}.DecodeRouterEvent(m.Data)
	if err != nil || ev.Event.EventID != 1 || ev.Event.Data.Kind != schemas.KindStored || len(ev.Event.Data.Stored.Blocks) != 2 {
		t.Fatalf("event %+v %v", ev, err)
	}
	local := kvevents.LocalBlockHashes(p.Tokens, 4)
	if uint64(ev.Event.Data.Stored.Blocks[1].TokensHash) != local[1] || uint64(ev.Event.Data.Stored.Blocks[1].BlockHash) != p.Seq[1] {
		t.Fatal("stored blocks carry Dynamo's local hash and the sequence hash")
	}
	ls, _ := js.Stream(ctx, "KV_LOAD")
	info, _ := ls.Info(ctx)
	if info.State.Msgs != 2 {
		t.Fatalf("%d load reports, want one per worker", info.State.Msgs)
	}
}
