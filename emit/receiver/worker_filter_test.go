package receiver

import (
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
)

func prefetchFor(t *testing.T, id string, worker uint64) actions.Hint {
	t.Helper()
	exp := time.Now().Add(10 * time.Second)
	body, mid, err := actions.EncodePrefetch(actions.Prefetch{RequestID: id, Model: "m", TokenIDs: []uint32{1, 2},
		ExpiresAt: exp, WorkerID: worker})
	if err != nil {
		t.Fatal(err)
	}
	return actions.Hint{MessageID: mid, Body: body, Deadline: exp}
}

// TestPrefetchForAnotherWorkerDropped: a receiver bound to worker 7
// takes its own prefetch and one naming no worker, and drops one meant
// for worker 8 (two records listing one endpoint), counting it. The Go
// receiver and the Python reference receiver agree.
func TestPrefetchForAnotherWorkerDropped(t *testing.T) {
	if _, err := New("tcp://127.0.0.1:*", (&collector{}).handle, WithWorkerID(0)); err == nil {
		t.Fatal("WithWorkerID(0) accepted")
	}
	r, c := serve(t, WithWorkerID(7))
	py := startPyReceiver(t, "--worker-id", "7")
	pool := sendPool(t)
	hs := []actions.Hint{prefetchFor(t, "mine", 7), prefetchFor(t, "theirs", 8), prefetchFor(t, "unnamed", 0)}
	for _, ep := range []string{r.Endpoint(), py.ep} {
		for _, h := range hs {
			if err := pool.Send(ep, h); err != nil {
				t.Fatal(err)
			}
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return len(c.hints()) == 2 && r.Counters().OtherWorker.Value() == 1 },
		"two prefetches taken, one dropped")
	for _, h := range c.hints() {
		if h.Prefetch.RequestID == "theirs" {
			t.Fatal("worker 8's prefetch delivered to worker 7")
		}
		if h.Prefetch.RequestID == "mine" && h.Prefetch.WorkerID != 7 {
			t.Fatalf("worker_id decoded as %d", h.Prefetch.WorkerID)
		}
	}
	for range 2 {
		if id := py.next(t)["payload"].(map[string]any)["request_id"]; id == "theirs" {
			t.Fatal("the Python receiver delivered worker 8's prefetch")
		}
	}
	_ = py.stdin.Close()
	if n := py.next(t)["counters"].(map[string]any)["other_worker"]; n != 1.0 {
		t.Fatalf("python other_worker = %v, want 1", n)
	}
}
