package zmqsend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// releases counts Hint.Release calls per message id and scribbles over
// each released body, as a caller reusing the buffer would.
type releases struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *releases) hint(i int, within time.Duration) actions.Hint {
	h := hint(i, within)
	id := h.MessageID
	h.Release = func(b []byte) {
		for k := range b {
			b[k] = 'X'
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.n[id]++
	}
	return h
}

func (r *releases) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// Release comes once per hint, after ZMQ took its own copy (the receiver
// gets every body intact although each was overwritten on release), for
// sent and dropped hints alike, and never for a hint Send refused.
func TestHintReleaseOncePoolIsDoneWithBody(t *testing.T) {
	r := &releases{n: map[string]int{}}
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t, zmqsend.WithSettleDelay(0))
	const n = 500 // a burst: some go inline, some through the queue
	for i := range n {
		if err := p.Send(ep, r.hint(i, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, ch, n, 10*time.Second)
	for i, b := range got {
		if want := fmt.Sprintf("h-%d", i); b != want {
			t.Fatalf("hint %d arrived as %q, want %q: the body was reused before ZMQ copied it", i, b, want)
		}
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return len(r.counts()) == n }, "every sent hint released")

	// Queued: no peer yet, so each waits in the sender's queue and goes
	// out from its goroutine once one binds.
	late := downEndpoint(t)
	for i := n; i < n+50; i++ {
		if err := p.Send(late, r.hint(i, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_, lateCh := puller(t, late)
	for k, b := range receive(t, lateCh, 50, 10*time.Second) {
		if want := fmt.Sprintf("h-%d", n+k); b != want {
			t.Fatalf("queued hint %d arrived as %q, want %q", n+k, b, want)
		}
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return len(r.counts()) == n+50 }, "every queued hint released")

	// Dropped on its deadline, with no peer to take it.
	down := downEndpoint(t)
	for i := n + 50; i < n+55; i++ {
		if err := p.Send(down, r.hint(i, 100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return len(r.counts()) == n+55 }, "every dropped hint released")
	for id, c := range r.counts() {
		if c != 1 {
			t.Fatalf("%s released %d times", id, c)
		}
	}

	// Refused: the body is the caller's again, no Release.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ep, r.hint(n+55, time.Second)); !errors.Is(err, actions.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if c := r.counts(); len(c) != n+55 {
		t.Fatalf("a refused hint was released: %d releases", len(c))
	}
}
