package e2e

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// messageSink is a worker's PULL socket counting hints by message_id.
type messageSink struct {
	ep   string
	mu   sync.Mutex
	seen map[string]int
}

func newMessageSink(t *testing.T) *messageSink {
	t.Helper()
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	ms := &messageSink{seen: map[string]int{}}
	ms.ep = zmqtest.Serve(t, sock, "tcp://127.0.0.1:*", func(b []byte) {
		var env schemas.KvHintsEnvelope
		if _, err := env.UnmarshalMsg(b); err == nil {
			ms.mu.Lock()
			ms.seen[env.MessageID]++
			ms.mu.Unlock()
		}
	})
	return ms
}

// counts returns distinct message ids and duplicates beyond the first.
func (ms *messageSink) counts() (distinct, dups int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, n := range ms.seen {
		distinct++
		dups += n - 1
	}
	return
}

// TestConsumerGroup: three members of one group share the requests.
// 1,000 wake-ups are each hinted exactly once; then, with one member
// SIGKILLed mid-run, its unacked messages go to the others and every
// wake-up is still hinted (duplicates counted and reported).
func TestConsumerGroup(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := newMessageSink(t)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{sink.ep}}); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--nats-url", srv.ClientURL(), "--group", "g", "--log-format", "json",
		// A long prefetch life, so a redelivered wake-up is still worth a hint;
		// a short ack wait, so the dead member's messages move on quickly.
		"--prefetch-ttl", "2m", "--ack-wait", "2s", "--max-ack-pending", "64"}
	members := []*proc{start(t, args...), start(t, args...), start(t, args...)}
	for _, m := range members {
		m.waitLine(t, 30*time.Second, "hintstream running")
	}
	prompt := seq(100, 64)
	pub := newPublisher(t, js)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			ev := wake(fmt.Sprintf("g-%d", i), "s", prompt)
			if err := pub.PublishRequest(ctx, &ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatalf("publishing: %v", err)
		}
	}

	// Phase 1: no faults.
	publish(0, 1000)
	natstest.Eventually(t, 60*time.Second, func() bool { d, _ := sink.counts(); return d == 1000 }, "1,000 hints")
	settledGroup(t, ctx, js)
	if d, dups := sink.counts(); d != 1000 || dups != 0 {
		t.Fatalf("phase 1: %d distinct, %d duplicates; want 1000 and 0", d, dups)
	}

	// Phase 2: SIGKILL one member while 1,000 more are consumed.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); publish(1000, 2000) }()
	natstest.Eventually(t, 30*time.Second, func() bool { d, _ := sink.counts(); return d >= 1300 }, "the run under way")
	if err := members[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	natstest.Eventually(t, 60*time.Second, func() bool { d, _ := sink.counts(); return d == 2000 },
		"every wake-up hinted after a member was killed")
	settledGroup(t, ctx, js)
	_, dups := sink.counts()
	// The survivors did part of the work, not all of it: the group shared it.
	var survivors float64
	for _, i := range []int{0, 2} {
		members[i].stop(t)
		n := finalCounters(t, members[i])["hintstream_requests_wakeup_total"]
		if n == 0 {
			t.Fatalf("member %d handled no wake-up", i)
		}
		survivors += n
	}
	if survivors >= 2000+float64(dups) {
		t.Fatalf("the survivors handled all %v wake-ups: the killed member never shared the work", survivors)
	}
	t.Logf("phase 2: 2000 distinct message ids, %d duplicates after SIGKILL; survivors handled %v", dups, survivors)
}

func settledGroup(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	natstest.Eventually(t, 30*time.Second, func() bool {
		c, err := js.Consumer(ctx, "LLM_REQUESTS", "g-requests")
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, "group consumer settled")
}
