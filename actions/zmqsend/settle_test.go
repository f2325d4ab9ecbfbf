package zmqsend_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// TestPoolSettleDelay: Done(true) comes no sooner than the settle delay
// after ZMQ took the hint (inline or from the queue alike), in order, and
// Close settles what is still waiting at once.
func TestPoolSettleDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t, zmqsend.WithSettleDelay(delay))
	var (
		mu    sync.Mutex
		order []int
	)
	sentAt := make([]time.Time, 10)
	doneAt := make([]time.Time, 10)
	for i := range 10 {
		h := hint(i, 5*time.Second)
		h.Done = func(sent bool) {
			mu.Lock()
			defer mu.Unlock()
			if sent {
				order = append(order, i)
				doneAt[i] = time.Now()
			}
		}
		sentAt[i] = time.Now()
		if err := p.Send(ep, h); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch, 10, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 10
	}, "every hint settled")
	mu.Lock()
	for i := range 10 {
		if order[i] != i {
			t.Fatalf("settled in order %v", order)
		}
		if d := doneAt[i].Sub(sentAt[i]); d < delay {
			t.Fatalf("hint %d settled %v after Send, before the %v delay", i, d, delay)
		}
	}
	mu.Unlock()

	// A delay longer than the test: only Close can settle it.
	long := newPool(t, zmqsend.WithSettleDelay(time.Hour))
	settled := make(chan bool, 1)
	h := hint(99, 5*time.Second)
	h.Done = func(sent bool) { settled <- sent }
	if err := long.Send(ep, h); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
	select {
	case <-settled:
		t.Fatal("settled before the delay")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := long.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case sent := <-settled:
		if !sent {
			t.Fatal("Close settled a sent hint as dropped")
		}
	default:
		t.Fatal("Close returned with a hint still unsettled")
	}
}
