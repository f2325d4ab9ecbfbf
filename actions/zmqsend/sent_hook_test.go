package zmqsend_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// TestSentHookOnlyOnDelivery: Hint.Sent runs once for each hint ZMQ took
// for a connected peer, before its Done(true), and never for a hint to an
// endpoint nobody listens on (which ends in Dropped and Done(false)).
func TestSentHookOnlyOnDelivery(t *testing.T) {
	up, ch := puller(t, "tcp://127.0.0.1:*")
	down := downEndpoint(t)
	p := newPool(t, zmqsend.WithSettleDelay(50*time.Millisecond))
	const n = 20
	var sentUp, doneUp, sentBeforeDone, sentDown, droppedDown, doneDown atomic.Int64
	for i := range n {
		h := hint(i, 5*time.Second)
		h.Sent = func() { sentUp.Add(1) }
		h.Done = func(ok bool) {
			if ok && sentUp.Load() > doneUp.Load() {
				sentBeforeDone.Add(1)
			}
			doneUp.Add(1)
		}
		if err := p.Send(up, h); err != nil {
			t.Fatal(err)
		}
		d := hint(i, 300*time.Millisecond)
		d.Sent = func() { sentDown.Add(1) }
		d.Dropped = func() { droppedDown.Add(1) }
		d.Done = func(bool) { doneDown.Add(1) }
		if err := p.Send(down, d); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch, n, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool { return doneUp.Load() == n && doneDown.Load() == n },
		"every hint settled")
	if got := sentUp.Load(); got != n {
		t.Fatalf("Sent ran %d times for %d delivered hints", got, n)
	}
	if got := sentBeforeDone.Load(); got != n {
		t.Fatalf("Sent preceded Done(true) for %d of %d hints", got, n)
	}
	if sentDown.Load() != 0 || droppedDown.Load() != n {
		t.Fatalf("down endpoint: Sent %d (want 0), Dropped %d (want %d)", sentDown.Load(), droppedDown.Load(), n)
	}
}
