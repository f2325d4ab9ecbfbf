package receiver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/testvectors"
	zmq "github.com/pebbe/zmq4"
	"github.com/tinylib/msgp/msgp"
)

// collector is a Handler that keeps what it was given.
type collector struct {
	mu  sync.Mutex
	got []Hint
}

func (c *collector) handle(_ context.Context, h Hint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, h)
}

func (c *collector) hints() []Hint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Hint(nil), c.got...)
}

func serve(t *testing.T, opts ...Option) (*Receiver, *collector) {
	t.Helper()
	c := &collector{}
	r, err := New("tcp://127.0.0.1:*", c.handle, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r, c
}

func sendPool(t *testing.T, opts ...zmqsend.PoolOption) *zmqsend.Pool {
	t.Helper()
	p, err := zmqsend.NewPool(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

func prefetchHint(t *testing.T, id string, expires time.Time) actions.Hint {
	t.Helper()
	body, mid, err := actions.EncodePrefetch(actions.Prefetch{RequestID: id, SessionID: "s", Model: "m",
		TokenIDs: []uint32{1, 2, 3}, DpRank: 1, ExpiresAt: expires})
	if err != nil {
		t.Fatal(err)
	}
	return actions.Hint{MessageID: mid, Body: body, Deadline: expires}
}

func pinHint(t *testing.T, p actions.Pin) actions.Hint {
	t.Helper()
	env, err := actions.NewPinEnvelope(p)
	if err != nil {
		t.Fatal(err)
	}
	body, err := env.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	return actions.Hint{MessageID: env.MessageID, Body: body, Deadline: time.Now().Add(5 * time.Second)}
}

// TestReceivesTheRealSender: hintstream's own sender (zmqsend.Pool) to the
// receiver: a prefetch and a pin reach the handler once each, a repeat
// of the prefetch's message id is dropped, and the release is delivered.
func TestReceivesTheRealSender(t *testing.T) {
	r, c := serve(t)
	pool := sendPool(t)
	h := prefetchHint(t, "req-1", time.Now().Add(5*time.Second))
	pin := pinHint(t, actions.Pin{Trigger: "req-2", Slot: "sess-2", Keys: []string{"k_1", "k_2"},
		TTL: 30 * time.Second, Priority: 40, Tokens: 2048})
	release := pinHint(t, actions.Pin{Trigger: "req-2", Slot: "sess-2"})
	for _, x := range []actions.Hint{h, h, pin, release} {
		if err := pool.Send(r.Endpoint(), x); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return len(c.hints()) >= 3 && r.Counters().Duplicate.Value() == 1 },
		"three hints and one duplicate")
	got := c.hints()
	if len(got) != 3 {
		t.Fatalf("%d hints delivered, want 3: %+v", len(got), got)
	}
	p := got[0].Prefetch
	if p == nil || p.RequestID != "req-1" || p.DpRank != 1 || len(p.TokenIDs) != 3 || got[0].Type != ActionPrefetch {
		t.Fatalf("prefetch delivered as %+v", got[0])
	}
	if got[1].Pin == nil || got[1].Pin.Slot != "sess-2" || len(got[1].Pin.Keys) != 2 || got[1].Pin.TTLMs != 30000 ||
		got[1].Pin.Priority != 40 || got[1].Pin.Tokens != 2048 {
		t.Fatalf("pin delivered as %+v", got[1])
	}
	if got[2].Pin == nil || got[2].Pin.TTLMs != 0 || got[2].MessageID == got[1].MessageID {
		t.Fatalf("release delivered as %+v", got[2])
	}
}

func TestExpiredPrefetchDropped(t *testing.T) {
	// The receiver's clock runs an hour ahead: every prefetch is late.
	r, c := serve(t, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	pool := sendPool(t)
	if err := pool.Send(r.Endpoint(), prefetchHint(t, "late", time.Now().Add(5*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := pool.Send(r.Endpoint(), pinHint(t, actions.Pin{Trigger: "p", Slot: "s", Keys: []string{"k"}, TTL: time.Second, Priority: 1})); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return len(c.hints()) == 1 }, "the pin")
	natstest.Eventually(t, 10*time.Second, func() bool { return r.Counters().Expired.Value() == 1 }, "the prefetch counted expired")
	if c.hints()[0].Pin == nil {
		t.Fatal("the expired prefetch was delivered")
	}
}

func TestDecodeSharedVector(t *testing.T) {
	env, err := Decode(testvectors.Read(t, "kv_hints_envelope.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	if env.MessageID != "wake-7f3a" || len(env.Actions) != 1 || env.Actions[0].Prefetch == nil ||
		env.Actions[0].Prefetch.RequestID != "req-1" {
		t.Fatalf("decoded %+v", env)
	}
}

// envelope builds an envelope with one action whose payload is given.
func envelope(typ string, payload []byte) []byte {
	b := msgp.AppendMapHeader(nil, 3)
	b = msgp.AppendString(b, "protocol_version")
	b = msgp.AppendString(b, "0.1")
	b = msgp.AppendString(b, "message_id")
	b = msgp.AppendString(b, "m-1")
	b = msgp.AppendString(b, "actions")
	b = msgp.AppendArrayHeader(b, 1)
	b = msgp.AppendMapHeader(b, 4)
	b = msgp.AppendString(b, "action_id")
	b = msgp.AppendString(b, "m-1/0")
	b = msgp.AppendString(b, "action_type")
	b = msgp.AppendString(b, typ)
	b = msgp.AppendString(b, "action_version")
	b = msgp.AppendString(b, "1.0")
	b = msgp.AppendString(b, "payload")
	return append(b, payload...)
}

func pinPayload(mut func(m map[string]any)) []byte {
	m := map[string]any{"slot": "s", "keys": []any{"k"}, "ttl_ms": int64(1000), "priority": int64(5), "tokens": int64(64)}
	mut(m)
	b, _ := msgp.AppendIntf(nil, m)
	return b
}

// strictCases are envelopes a strict decoder rejects, by name.
func strictCases() map[string][]byte {
	good := pinPayload(func(map[string]any) {})
	return map[string][]byte{
		"priority 0":        envelope("kv.pin", pinPayload(func(m map[string]any) { m["priority"] = int64(0) })),
		"priority 101":      envelope("kv.pin", pinPayload(func(m map[string]any) { m["priority"] = int64(101) })),
		"negative ttl":      envelope("kv.pin", pinPayload(func(m map[string]any) { m["ttl_ms"] = int64(-1) })),
		"float tokens":      envelope("kv.pin", pinPayload(func(m map[string]any) { m["tokens"] = 1.5 })),
		"bool priority":     envelope("kv.pin", pinPayload(func(m map[string]any) { m["priority"] = true })),
		"bin slot":          envelope("kv.pin", pinPayload(func(m map[string]any) { m["slot"] = []byte("s") })),
		"bin key":           envelope("kv.pin", pinPayload(func(m map[string]any) { m["keys"] = []any{[]byte("k")} })),
		"missing keys":      envelope("kv.pin", pinPayload(func(m map[string]any) { delete(m, "keys") })),
		"payload not a map": envelope("kv.other", msgp.AppendString(nil, "x")),
		"trailing bytes":    append(envelope("kv.pin", good), 0xc0),
		"truncated":         envelope("kv.pin", good)[:20],
		"not msgpack":       []byte("{}"),
		"empty":             {},
	}
}

func TestDecodeIsStrict(t *testing.T) {
	good := pinPayload(func(map[string]any) {})
	if _, err := Decode(envelope("kv.pin", good)); err != nil {
		t.Fatalf("good pin rejected: %v", err)
	}
	if env, err := Decode(envelope("kv.other", good)); err != nil || env.Actions[0].Pin != nil {
		t.Fatalf("unknown action type: %+v %v", env, err)
	}
	for name, b := range strictCases() {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCurveReceiver(t *testing.T) {
	if !zmq.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	pub, sec, err := zmq.NewCurveKeypair()
	if err != nil {
		t.Fatal(err)
	}
	r, c := serve(t, WithCurveServer(sec))
	pool := sendPool(t, zmqsend.WithCurve(func(string) (string, bool) { return pub, true }))
	if err := pool.Send(r.Endpoint(), prefetchHint(t, "secret", time.Now().Add(5*time.Second))); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return len(c.hints()) == 1 }, "the hint over CURVE")
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Option{WithDedupWindow(0), WithCurveServer("short"), WithClock(nil), WithCounters(nil)} {
		if _, err := New("tcp://127.0.0.1:*", func(context.Context, Hint) {}, o); err == nil {
			t.Error("bad option accepted")
		}
	}
	w := newWindow(2)
	if !w.add("a") || !w.add("b") || w.add("a") || !w.add("c") || !w.add("a") {
		t.Fatal("dedup window does not forget the oldest id")
	}
}

// TestPrefetchCacheSaltIsStr: cache_salt is read as a str, and a salt of
// another type (an int, a bin) rejects the hint as msgspec would.
func TestPrefetchCacheSaltIsStr(t *testing.T) {
	payload := func(salt any) []byte {
		b, _ := msgp.AppendIntf(nil, map[string]any{"request_id": "r", "token_ids": []any{int64(1)}, "cache_salt": salt})
		return b
	}
	env, err := Decode(envelope("kv.prefetch", payload("tenant")))
	if err != nil || env.Actions[0].Prefetch.CacheSalt != "tenant" {
		t.Fatalf("str salt: %+v, %v", env, err)
	}
	for _, bad := range []any{int64(7), []byte("tenant")} {
		if _, err := Decode(envelope("kv.prefetch", payload(bad))); err == nil {
			t.Errorf("cache_salt %T accepted", bad)
		}
	}
}
