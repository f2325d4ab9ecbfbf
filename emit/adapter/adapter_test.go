package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
	"github.com/hintstream/hintstream/observe/metrics"
)

const model = "Qwen/Qwen3-8B"

// engine starts a stand-in for the test with args.
func engine(t *testing.T, args ...string) *standin.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), standin.Timeout)
	defer cancel()
	e, err := standin.Start(ctx, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func stats(t *testing.T, e *standin.Engine) standin.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run starts an adapter of cfg (Bind on a free loopback port) until the
// test ends.
func run(t *testing.T, cfg Config, opts ...Option) *Adapter {
	t.Helper()
	if cfg.Bind == "" {
		cfg.Bind = "tcp://127.0.0.1:*"
	}
	a, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return a
}

// sender is hintstream's own sender: an zmqsend.Pool of PUSH sockets.
func sender(t *testing.T) *zmqsend.Pool {
	t.Helper()
	p, err := zmqsend.NewPool()
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

func sendPrefetch(t *testing.T, pool *zmqsend.Pool, ep string, p actions.Prefetch) {
	t.Helper()
	body, id, err := actions.EncodePrefetch(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Send(ep, actions.Hint{MessageID: id, Body: body, Deadline: p.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
}

func sendRetain(t *testing.T, pool *zmqsend.Pool, ep string, r actions.Retain) {
	t.Helper()
	body, id, err := actions.EncodeRetain(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Send(ep, actions.Hint{MessageID: id, Body: body, Deadline: r.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
}

func tokens(n int) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = uint32(i * 7)
	}
	return ts
}

func wantTokens(t *testing.T, got any, want []uint32) {
	t.Helper()
	l, ok := got.([]any)
	if !ok || len(l) != len(want) {
		t.Fatalf("tokens sent as %v, want %d ids", got, len(want))
	}
	for i, v := range l {
		if f, ok := v.(float64); !ok || uint32(f) != want[i] {
			t.Fatalf("token %d sent as %v, want %d", i, v, want[i])
		}
	}
}

func value(c *metrics.CounterVec, lv string) uint64 { return c.With(lv).Value() }

// TestSGLangPrefetch: a prefetch sent twice (the same message id) over
// ZeroMQ becomes one native /generate call with input_ids and
// max_new_tokens 1, accepted by the stand-in with no field ignored.
func TestSGLangPrefetch(t *testing.T) {
	e := engine(t, "--engine", "sglang")
	a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL})
	pool := sender(t)
	p := actions.Prefetch{RequestID: "wake-1", SessionID: "s-1", Model: model, TokenIDs: tokens(40), ExpiresAt: time.Now().Add(10 * time.Second)}
	sendPrefetch(t, pool, a.Endpoint(), p)
	sendPrefetch(t, pool, a.Endpoint(), p)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return value(a.Counters().Calls, "kv.prefetch") == 1 && a.ReceiverCounters().Duplicate.Value() == 1
	}, "one call, one duplicate")
	s := stats(t, e)
	if len(s.Accepted) != 1 || len(s.Rejected) != 0 {
		t.Fatalf("stand-in accepted %d, rejected %+v; want 1 and none", len(s.Accepted), s.Rejected)
	}
	got := s.Accepted[0]
	if len(got.Ignored) != 0 {
		t.Fatalf("SGLang would ignore fields %v", got.Ignored)
	}
	wantTokens(t, got.Body["input_ids"], p.TokenIDs)
	sp, _ := got.Body["sampling_params"].(map[string]any)
	if len(sp) != 1 || sp["max_new_tokens"] != float64(1) {
		t.Fatalf("sampling_params %v, want only max_new_tokens 1", got.Body["sampling_params"])
	}
	if _, ok := got.Body["priority"]; ok {
		t.Fatal("priority sent without --engine-priority")
	}
}

// TestVLLMPrefetchSetsPriority: each prefetch becomes a one-token
// /v1/completions carrying vllm.set_priority for the session's claim,
// with a revision that grows and a TTL covering the configured wait.
func TestVLLMPrefetchSetsPriority(t *testing.T) {
	e := engine(t, "--engine", "vllm", "--model", model)
	a := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL, PrefetchTTL: 90 * time.Second})
	pool := sender(t)
	for i := range 2 {
		sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: fmt.Sprintf("wake-%d", i), SessionID: "sess-A",
			Model: model, TokenIDs: tokens(32 + i), ExpiresAt: time.Now().Add(10 * time.Second)})
		natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == uint64(i+1) }, "call %d", i)
	}
	s := stats(t, e)
	if len(s.Accepted) != 2 {
		t.Fatalf("accepted %d, rejected %+v", len(s.Accepted), s.Rejected)
	}
	var revs []float64
	for i, acc := range s.Accepted {
		b := acc.Body
		if len(acc.Ignored) != 0 {
			t.Fatalf("vLLM would ignore %v", acc.Ignored)
		}
		if b["model"] != model || b["max_tokens"] != float64(1) {
			t.Fatalf("request %d: model %v max_tokens %v", i, b["model"], b["max_tokens"])
		}
		wantTokens(t, b["prompt"], tokens(32+i))
		kh := b["kv_hints"].(map[string]any)
		act := kh["actions"].([]any)[0].(map[string]any)
		if kh["protocol_version"] != "0.1" || act["action_type"] != "vllm.set_priority" || act["action_version"] != "1.0" {
			t.Fatalf("kv_hints %v", kh)
		}
		pl := act["payload"].(map[string]any)
		if pl["target"] != "request_cached" || pl["location"] != "local_g1" || pl["claim_id"] != "hintstream/sess-A" ||
			pl["value"] != float64(DefaultPrefetchValue) || pl["ttl_seconds"].(float64) < 90 {
			t.Fatalf("set_priority payload %v", pl)
		}
		revs = append(revs, pl["revision"].(float64))
	}
	if revs[1] <= revs[0] {
		t.Fatalf("revisions %v do not grow", revs)
	}
}

// TestVLLMRetain: hintstream.retain@1.0 becomes a one-token request whose
// set_priority carries the retain's claim, revision, priority and TTL.
func TestVLLMRetain(t *testing.T) {
	e := engine(t, "--engine", "vllm", "--model", model)
	a := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL})
	pool := sender(t)
	sendRetain(t, pool, a.Endpoint(), actions.Retain{Trigger: "turn-9", SessionID: "sess-B", Model: model,
		TokenIDs: tokens(64), TTL: 45 * time.Second, Priority: 37, ClaimID: "hintstream/sess-B", Revision: 1234,
		ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "hintstream.retain") == 1 }, "the retain call")
	s := stats(t, e)
	if len(s.Accepted) != 1 {
		t.Fatalf("accepted %d, rejected %+v", len(s.Accepted), s.Rejected)
	}
	pl := s.Accepted[0].Body["kv_hints"].(map[string]any)["actions"].([]any)[0].(map[string]any)["payload"].(map[string]any)
	if pl["claim_id"] != "hintstream/sess-B" || pl["revision"] != float64(1234) || pl["value"] != float64(37) || pl["ttl_seconds"] != float64(45) {
		t.Fatalf("retain sent as %v", pl)
	}
	wantTokens(t, s.Accepted[0].Body["prompt"], tokens(64))
}

// TestSGLangRetainUnsupported: SGLang's HTTP API has no cache priority
// to carry a retain with: it is counted, and no call is made.
func TestSGLangRetainUnsupported(t *testing.T) {
	e := engine(t, "--engine", "sglang")
	a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL})
	pool := sender(t)
	sendRetain(t, pool, a.Endpoint(), actions.Retain{Trigger: "t", TokenIDs: tokens(8), TTL: time.Second, Priority: 1,
		ClaimID: "hintstream/s", ExpiresAt: time.Now().Add(10 * time.Second)})
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "after", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "the prefetch after it")
	if got := value(a.Counters().Dropped, metrics.AdapterDropUnsupported); got != 1 {
		t.Fatalf("unsupported %d, want 1", got)
	}
	if s := stats(t, e); len(s.Accepted) != 1 {
		t.Fatalf("engine saw %d calls, want only the prefetch", len(s.Accepted))
	}
}

// TestExpiredNeverActedOn: hints that arrive expired are dropped by the
// socket's rules; a hint that expires while waiting for a call slot
// (the one slot held by a slow call) is dropped before its call.
func TestExpiredNeverActedOn(t *testing.T) {
	e := engine(t, "--engine", "sglang", "--delay-ms", "600")
	a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: 1})
	pool := sender(t)
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "slow", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Accepted, "kv.prefetch") == 1 }, "the slow one queued")
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "short", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(150 * time.Millisecond)})
	natstest.Eventually(t, 10*time.Second, func() bool {
		return value(a.Counters().Dropped, metrics.AdapterDropExpired) == 1 && value(a.Counters().Calls, "kv.prefetch") == 1
	}, "the short one dropped, the slow one done")
	if s := stats(t, e); len(s.Accepted) != 1 {
		t.Fatalf("engine saw %d calls, want 1", len(s.Accepted))
	}

	// A clock an hour ahead: both actions are late on arrival.
	late := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL, Model: model}, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	sendPrefetch(t, pool, late.Endpoint(), actions.Prefetch{RequestID: "late", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	sendRetain(t, pool, late.Endpoint(), actions.Retain{Trigger: "late", TokenIDs: tokens(8), TTL: time.Minute, Priority: 5,
		ClaimID: "hintstream/x", ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return late.ReceiverCounters().Expired.Value() == 2 }, "both expired on arrival")
	if n := value(late.Counters().Accepted, "kv.prefetch") + value(late.Counters().Accepted, "hintstream.retain"); n != 0 {
		t.Fatalf("%d expired hints queued", n)
	}
}

// TestEngineDown: no engine listening: the call is retried while the
// hint lives, then dropped as expired; nothing is retried after.
func TestEngineDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	a := run(t, Config{Engine: EngineSGLang, EngineURL: url, RetryDelay: 20 * time.Millisecond})
	pool := sender(t)
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "down", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(400 * time.Millisecond)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Dropped, metrics.AdapterDropExpired) == 1 }, "given up at expiry")
	c := a.Counters()
	fails, retries := value(c.Failed, metrics.AdapterFailUnreachable), c.Retries.Value()
	if fails < 2 || retries != fails-1 {
		t.Fatalf("unreachable %d, retries %d: want >= 2 attempts, each but the first a retry", fails, retries)
	}
}

// TestEngineSlow: a slow engine never blocks the socket: concurrent calls
// stay within MaxInflight, the queue overflows into queue_full drops, and
// a call past CallTimeout is counted as a timeout and not retried.
func TestEngineSlow(t *testing.T) {
	e := engine(t, "--engine", "sglang", "--delay-ms", "400")
	a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: 2, QueueSize: 2})
	pool := sender(t)
	const n = 12
	for i := range n {
		sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: fmt.Sprintf("burst-%d", i), TokenIDs: tokens(8),
			ExpiresAt: time.Now().Add(20 * time.Second)})
	}
	// All n are read off the socket long before the calls could finish.
	natstest.Eventually(t, 2*time.Second, func() bool { return a.ReceiverCounters().Received.Value() == n }, "every hint read")
	c := a.Counters()
	natstest.Eventually(t, 15*time.Second, func() bool {
		acc := value(c.Accepted, "kv.prefetch")
		return acc > 0 && value(c.Calls, "kv.prefetch") == acc
	}, "every accepted hint called")
	acc, full := value(c.Accepted, "kv.prefetch"), value(c.Dropped, metrics.AdapterDropQueueFull)
	if acc+full != n || full == 0 || acc > 4+2 { // 2 in flight + 2 queued, and a few freed while reading
		t.Fatalf("accepted %d, queue_full %d of %d", acc, full, n)
	}
	if s := stats(t, e); s.MaxInflight > 2 {
		t.Fatalf("engine saw %d calls at once, cap is 2", s.MaxInflight)
	}

	to := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, CallTimeout: 100 * time.Millisecond})
	sendPrefetch(t, pool, to.Endpoint(), actions.Prefetch{RequestID: "timeout", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(20 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(to.Counters().Failed, metrics.AdapterFailTimeout) == 1 }, "a timeout")
	if to.Counters().Retries.Value() != 0 {
		t.Fatal("a timed-out call was retried")
	}
}

// TestEngineRefuses: a 4xx (here vLLM's 404 for a model it does not
// serve) is counted as refused and never retried; a 5xx is retried.
func TestEngineRefuses(t *testing.T) {
	e := engine(t, "--engine", "vllm", "--model", "some/other-model")
	a := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL})
	pool := sender(t)
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "wrong-model", Model: model, TokenIDs: tokens(8),
		ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Failed, metrics.AdapterFailRefused) == 1 }, "refused")
	if a.Counters().Retries.Value() != 0 {
		t.Fatal("a refused call was retried")
	}
	s := stats(t, e)
	if len(s.Rejected) != 1 || s.Rejected[0].Status != 404 {
		t.Fatalf("stand-in rejected %+v", s.Rejected)
	}

	e5 := engine(t, "--engine", "sglang", "--status", "503")
	b := run(t, Config{Engine: EngineSGLang, EngineURL: e5.URL, RetryDelay: 20 * time.Millisecond})
	sendPrefetch(t, pool, b.Endpoint(), actions.Prefetch{RequestID: "busy", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(300 * time.Millisecond)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(b.Counters().Dropped, metrics.AdapterDropExpired) == 1 }, "given up at expiry")
	if f := value(b.Counters().Failed, metrics.AdapterFailServerError); f < 2 {
		t.Fatalf("server errors %d, want retries until expiry", f)
	}
}

// TestVLLMNeedsModel: vLLM needs a model name; without one in the hint
// or the configuration the hint is dropped, not sent to be refused.
func TestVLLMNeedsModel(t *testing.T) {
	e := engine(t, "--engine", "vllm", "--model", model)
	a := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL})
	pool := sender(t)
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "nomodel", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Dropped, metrics.AdapterDropNoModel) == 1 }, "no_model")

	withModel := run(t, Config{Engine: EngineVLLM, EngineURL: e.URL, Model: model})
	sendPrefetch(t, pool, withModel.Endpoint(), actions.Prefetch{RequestID: "nomodel-2", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(withModel.Counters().Calls, "kv.prefetch") == 1 }, "sent with --model")
}

// TestEnginePriority: a configured engine priority is sent, and vLLM
// without priority scheduling refuses one (the operator's mistake shows
// as refused calls).
func TestEnginePriority(t *testing.T) {
	prio := int64(1000)
	on := engine(t, "--engine", "vllm", "--model", model, "--priority-scheduling")
	off := engine(t, "--engine", "vllm", "--model", model)
	pool := sender(t)
	for _, c := range []struct {
		e    *standin.Engine
		call bool
	}{{on, true}, {off, false}} {
		a := run(t, Config{Engine: EngineVLLM, EngineURL: c.e.URL, Model: model, EnginePriority: &prio})
		sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "p", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
		natstest.Eventually(t, 10*time.Second, func() bool {
			return value(a.Counters().Calls, "kv.prefetch")+value(a.Counters().Failed, metrics.AdapterFailRefused) == 1
		}, "one outcome")
		if got := value(a.Counters().Calls, "kv.prefetch") == 1; got != c.call {
			t.Fatalf("priority scheduling %v: call succeeded %v", c.call, got)
		}
	}
	if b := stats(t, on).Accepted[0].Body; b["priority"] != float64(prio) {
		t.Fatalf("priority sent as %v", b["priority"])
	}
}

func TestConfigValidates(t *testing.T) {
	for _, c := range []Config{
		{Engine: "tgi", EngineURL: "http://127.0.0.1:1"},
		{Engine: EngineVLLM, EngineURL: "127.0.0.1:1"},
		{Engine: EngineVLLM, EngineURL: "http://127.0.0.1:1", MaxInflight: -1},
		{Engine: EngineVLLM, EngineURL: "http://127.0.0.1:1", PrefetchValue: -3},
		{Engine: EngineVLLM, EngineURL: "http://127.0.0.1:1", CurveSecretKey: "short"},
	} {
		c.Bind = "tcp://127.0.0.1:*"
		if a, err := New(c); !errors.Is(err, ErrInvalidOption) {
			if a != nil {
				a.Close()
			}
			t.Errorf("%+v: err %v, want ErrInvalidOption", c, err)
		}
	}
}
