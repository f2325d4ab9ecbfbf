package zmqsend_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// puller binds a real PULL socket at endpoint ("tcp://127.0.0.1:*" for a
// free port) and returns the bound endpoint and the messages it receives.
// One goroutine owns the socket; it stops at test cleanup.
func puller(t *testing.T, endpoint string) (string, <-chan []byte) {
	t.Helper()
	return zmqtest.Pull(t, endpoint, 10000)
}

// downEndpoint is a loopback endpoint where nothing listens.
func downEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "tcp://" + l.Addr().String()
	l.Close()
	return ep
}

func newPool(t *testing.T, opts ...zmqsend.PoolOption) *zmqsend.Pool {
	t.Helper()
	p, err := zmqsend.NewPool(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func hint(i int, within time.Duration) actions.Hint {
	id := fmt.Sprintf("h-%d", i)
	return actions.Hint{MessageID: id, Body: []byte(id), Deadline: time.Now().Add(within)}
}

func receive(t *testing.T, ch <-chan []byte, n int, within time.Duration) []string {
	t.Helper()
	within = natstest.Within(within)
	deadline := time.After(within)
	var got []string
	for len(got) < n {
		select {
		case b := <-ch:
			got = append(got, string(b))
		case <-deadline:
			t.Fatalf("received %d of %d hints within %v", len(got), n, within)
		}
	}
	return got
}

func TestPoolDelivers(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t)
	for i := range 100 {
		if err := p.Send(ep, hint(i, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, ch, 100, 5*time.Second)
	for i, b := range got { // one socket, one connection: order kept
		if want := fmt.Sprintf("h-%d", i); b != want {
			t.Fatalf("hint %d = %s, want %s", i, b, want)
		}
	}
	natstest.Eventually(t, time.Second, func() bool { return p.Stats()[ep].Sent == 100 }, "sent count")
}

func TestPoolDownEndpointDoesNotDelayOthers(t *testing.T) {
	down := downEndpoint(t)
	up, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t)
	const n = 50
	start := time.Now()
	for i := range n {
		if err := p.Send(down, hint(i, 3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := p.Send(up, hint(i, 3*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch, n, 2*time.Second)
	took := time.Since(start)
	// Every hint to the down endpoint is still pending: none sent, none
	// expired yet, so the up endpoint did not wait for any of them.
	if st := p.Stats()[down]; st.Sent != 0 || st.Dropped[actions.DropExpired] != 0 {
		t.Fatalf("down endpoint stats after %v: %+v", took, st)
	}
	natstest.Eventually(t, 6*time.Second, func() bool {
		return p.Stats()[down].Dropped[actions.DropExpired] == n
	}, "down endpoint's hints expire")
	st := p.Stats()[down]
	if st.Sent != 0 || st.Retried == 0 || st.QueueDepth != 0 {
		t.Fatalf("down endpoint stats = %+v", st)
	}
}

func TestPoolDeliversWhenPeerComesUp(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t)
	if err := p.Send(ep, hint(1, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return p.Stats()[ep].Retried > 0 }, "retry while down")
	_, ch := puller(t, ep)
	if got := receive(t, ch, 1, 9*time.Second); got[0] != "h-1" {
		t.Fatalf("got %q", got[0])
	}
	natstest.Eventually(t, time.Second, func() bool { return p.Stats()[ep].Sent == 1 }, "sent count")
}

func TestPoolDropsExpired(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t)
	past := actions.Hint{MessageID: "old", Body: []byte("x"), Deadline: time.Now().Add(-time.Millisecond)}
	if err := p.Send(ep, past); !errors.Is(err, actions.ErrExpired) {
		t.Fatalf("past deadline: err = %v, want ErrExpired", err)
	}
	if err := p.Send(ep, actions.Hint{Body: []byte("x")}); !errors.Is(err, actions.ErrExpired) {
		t.Fatalf("no deadline: err = %v, want ErrExpired", err)
	}
	if err := p.Send(ep, hint(1, 300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 3*time.Second, func() bool {
		return p.Stats()[ep].Dropped[actions.DropExpired] == 3
	}, "3 expired")
	// A peer that comes up now must not get the expired hint.
	_, ch := puller(t, ep)
	if err := p.Send(ep, hint(2, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, ch, 1, 5*time.Second); got[0] != "h-2" {
		t.Fatalf("first hint delivered = %q, want h-2", got[0])
	}
}

func TestPoolQueueFull(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t, zmqsend.WithQueueSize(2))
	full := 0
	for i := range 10 {
		switch err := p.Send(ep, hint(i, time.Minute)); {
		case errors.Is(err, actions.ErrQueueFull):
			full++
		case err != nil:
			t.Fatal(err)
		}
	}
	// 2 queued, at most 1 in flight.
	if full < 7 {
		t.Fatalf("%d of 10 refused, want >= 7", full)
	}
	if got := p.Stats()[ep].Dropped[actions.DropQueueFull]; got != uint64(full) {
		t.Fatalf("queue_full count = %d, want %d", got, full)
	}
	p.Remove(ep) // no flush of minute-long hints at cleanup
}

func TestPoolRemove(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t)
	for i := range 5 {
		if err := p.Send(ep, hint(i, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	p.Remove(ep)
	if st := p.Stats()[ep]; st.Dropped[actions.DropRemoved] != 5 || st.Sent != 0 || st.QueueDepth != 0 {
		t.Fatalf("after Remove: %+v", st)
	}
	// A later Send makes a new sender on the endpoint.
	_, ch := puller(t, ep)
	if err := p.Send(ep, hint(9, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
}

func TestPoolCloseFlushes(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := p.Send(ep, hint(i, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	receive(t, ch, 200, 5*time.Second)
	if err := p.Send(ep, hint(0, time.Second)); !errors.Is(err, actions.ErrClosed) {
		t.Fatalf("Send after Close: err = %v, want ErrClosed", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestPoolCloseGivesUpAtContext(t *testing.T) {
	ep := downEndpoint(t)
	p, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := p.Send(ep, hint(i, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: err = %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	if st := p.Stats()[ep]; st.Dropped[actions.DropClosed] != 5 {
		t.Fatalf("stats = %+v, want 5 closed", st)
	}
}

func TestPoolCloseLeaksNoGoroutine(t *testing.T) {
	up, ch := puller(t, "tcp://127.0.0.1:*")
	down := downEndpoint(t)
	before := runtime.NumGoroutine()
	p, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		p.Send(up, hint(i, 5*time.Second))
		p.Send(down, hint(i, 5*time.Second))
	}
	// (A goroutine count here would also see other tests' goroutines
	// winding down; the pool's own view says both senders exist.)
	if got := len(p.Stats()); got != 2 {
		t.Fatalf("%d endpoints with senders, want 2", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	p.Close(ctx)
	natstest.Eventually(t, 2*time.Second, func() bool { return runtime.NumGoroutine() <= before },
		"goroutines back to %d", before)
	receive(t, ch, 20, 5*time.Second)
}

func TestPoolRejectsBadInput(t *testing.T) {
	p := newPool(t)
	if err := p.Send("nonsense", hint(1, time.Second)); !errors.Is(err, actions.ErrEndpoint) {
		t.Errorf("bad endpoint: err = %v, want ErrEndpoint", err)
	}
	if err := p.Send(downEndpoint(t), actions.Hint{Deadline: time.Now().Add(time.Second)}); !errors.Is(err, actions.ErrInvalidHint) {
		t.Errorf("empty body: err = %v, want actions.ErrInvalidHint", err)
	}
}

// TestPoolMaxHeld: a backed-up endpoint holds at most WithMaxHeld
// triggers; later hints are released (Done at Send) yet still delivered
// once the peer is up.
func TestPoolMaxHeld(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t, zmqsend.WithMaxHeld(3))
	var mu sync.Mutex
	done := map[int]bool{} // hint -> sent
	for i := range 10 {
		h := hint(i, time.Minute)
		h.Done = func(sent bool) {
			mu.Lock()
			done[i] = sent
			mu.Unlock()
		}
		if err := p.Send(ep, h); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	released := len(done)
	for i := range 3 {
		if _, ok := done[i]; ok {
			t.Errorf("hint %d, within the bound, was released at Send", i)
		}
	}
	mu.Unlock()
	if released != 7 || p.Stats()[ep].Released != 7 {
		t.Fatalf("released at Send: %d (stats %d), want 7", released, p.Stats()[ep].Released)
	}
	_, ch := puller(t, ep)
	if got := receive(t, ch, 10, 10*time.Second); len(got) != 10 {
		t.Fatalf("delivered %d of 10", len(got))
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == 10 && done[0] && done[1] && done[2]
	}, "the 3 held hints settled as sent")
}

// TestPoolSendsInlineWhenIdle: to an idle endpoint with a connected peer,
// Send hands the hint to ZMQ itself and, with no settle delay, Done has
// run when it returns.
func TestPoolSendsInlineWhenIdle(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t, zmqsend.WithSettleDelay(0))
	n := 0
	send := func(done func(bool)) {
		h := hint(n, 5*time.Second)
		n++
		h.Done = done
		if err := p.Send(ep, h); err != nil {
			t.Fatal(err)
		}
		receive(t, ch, 1, 5*time.Second)
	}
	// The first hints wait for the connection on the sender goroutine,
	// which may still count one as pending when the next is sent.
	natstest.Eventually(t, 5*time.Second, func() bool {
		send(nil)
		return p.Stats()[ep].Inline > 0
	}, "a hint sent inline once connected")
	// From then on nothing is pending between hints: every one is inline,
	// and its Done has run by the time Send returns.
	before := p.Stats()[ep].Inline
	for i := range 20 {
		ran := false
		send(func(sent bool) { ran = sent })
		if !ran {
			t.Fatalf("hint %d to an idle endpoint: Done had not run when Send returned", i)
		}
	}
	if got := p.Stats()[ep].Inline - before; got != 20 {
		t.Fatalf("%d of 20 hints to an idle endpoint sent inline", got)
	}
}

// TestPoolKeepsOrderAcrossInlineAndQueued: hints queued while the peer
// was down go out before any sent after it came back.
func TestPoolKeepsOrderAcrossInlineAndQueued(t *testing.T) {
	ep := downEndpoint(t)
	p := newPool(t)
	for i := range 5 {
		if err := p.Send(ep, hint(i, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_, ch := puller(t, ep)
	for i := 5; i < 50; i++ {
		if err := p.Send(ep, hint(i, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, ch, 50, 10*time.Second)
	for i, id := range got {
		if want := fmt.Sprintf("h-%d", i); id != want {
			t.Fatalf("hint %d received was %s, want %s (order %v)", i, id, want, got)
		}
	}
}
