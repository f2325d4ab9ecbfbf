package zmqsend_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// Latency stats count only sent hints and measure from Send to ZMQ
// accepting the hint, including time spent retrying while the peer is down.
func TestPoolSendLatency(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t)
	const n = 20
	start := time.Now()
	for i := range n {
		if err := p.Send(ep, hint(i, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch, n, 5*time.Second)
	natstest.Eventually(t, time.Second, func() bool { return p.Stats()[ep].Sent == n }, "sent count")
	bound := time.Since(start)
	st := p.Stats()[ep]
	if st.LatencyCount != n || st.LatencySum <= 0 || st.LatencyMax <= 0 {
		t.Fatalf("stats = %+v", st)
	}
	if st.LatencyMax > st.LatencySum || st.LatencyMax > bound || st.LatencySum/n > st.LatencyMax {
		t.Fatalf("latency max %v, sum %v inconsistent (all sent within %v)", st.LatencyMax, st.LatencySum, bound)
	}

	// A hint that waits for its peer: its latency covers the wait.
	down := downEndpoint(t)
	sent := time.Now()
	if err := p.Send(down, hint(1, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return p.Stats()[down].Retried > 0 }, "retry while down")
	waited := time.Since(sent)
	// An expired hint counts no latency.
	if err := p.Send(down, hint(2, 0)); err == nil {
		t.Fatal("expired hint accepted")
	}
	_, dch := puller(t, down)
	receive(t, dch, 1, 9*time.Second)
	natstest.Eventually(t, time.Second, func() bool { return p.Stats()[down].Sent == 1 }, "sent count")
	if st := p.Stats()[down]; st.LatencyCount != 1 || st.LatencyMax < waited || st.LatencySum != st.LatencyMax {
		t.Fatalf("down endpoint: latency count %d, max %v, sum %v; want 1 hint that waited >= %v",
			st.LatencyCount, st.LatencyMax, st.LatencySum, waited)
	}
}

// The sent hook sees every sent hint once, with its endpoint.
func TestPoolSentHook(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	var mu sync.Mutex
	seen := map[string]int{}
	p, err := zmqsend.NewPool(zmqsend.WithSentHook(func(endpoint string, d time.Duration) {
		if d <= 0 {
			t.Errorf("latency %v", d)
		}
		mu.Lock()
		seen[endpoint]++
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	for i := range 5 {
		if err := p.Send(ep, hint(i, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch, 5, 5*time.Second)
	natstest.Eventually(t, time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return seen[ep] == 5 }, "5 hooks")
}

// Done settles every accepted hint once: true when sent, false when
// dropped (here: its peer never came, so it expired).
func TestHintDone(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t)
	got := make(chan bool, 2)
	h := hint(1, 5*time.Second)
	h.Done = func(sent bool) { got <- sent }
	if err := p.Send(ep, h); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
	if sent := <-got; !sent {
		t.Fatal("a delivered hint settled as dropped")
	}
	h = hint(2, 300*time.Millisecond)
	h.Done = func(sent bool) { got <- sent }
	if err := p.Send(downEndpoint(t), h); err != nil {
		t.Fatal(err)
	}
	select {
	case sent := <-got:
		if sent {
			t.Fatal("an undeliverable hint settled as sent")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an expired hint was never settled")
	}
	select {
	case <-got:
		t.Fatal("a hint settled twice")
	default:
	}
}
