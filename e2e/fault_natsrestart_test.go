package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestFaultNATSRestartUnderLoad: the NATS server (file store) is shut
// down and started again on the same port and store while wake-ups flow.
// The running instance reconnects by itself and every wake-up the
// publisher got a JetStream ack for is hinted: nothing stored is lost.
func TestFaultNATSRestartUnderLoad(t *testing.T) {
	const total, restartAt = 3000, 1000
	port, dir := freePort(t), t.TempDir()
	srv, err := natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	// The publisher reconnects quickly and forever, like a frontend would.
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := workerSink(t, ctx, js, 1)
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--group", "fr", "--log-format", "json",
		// Acks in flight when the server stops are lost; their wake-ups come
		// back (and are hinted again) after the ack wait: keep it short.
		"--prefetch-ttl", "2m", "--ack-wait", "5s", "--snapshot-interval", "0")
	p.waitLine(t, 30*time.Second, "hintstream running")

	// publish stores wake-ups [from, to), retrying through the outage
	// until each has a JetStream ack; the message id makes a retry whose
	// first attempt was stored a no-op.
	prompt := seq(11, 64)
	retries := 0
	publish := func(from, to int) {
		unacked := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			unacked = append(unacked, i)
		}
		for len(unacked) > 0 {
			if ctx.Err() != nil {
				t.Errorf("publishing: %v", ctx.Err())
				return
			}
			futs := make([]jetstream.PubAckFuture, len(unacked))
			for k, i := range unacked {
				id := fmt.Sprintf("r-%d", i)
				// By hand: this test is about publishing across the restart,
				// each message's ack tracked and retried under its own id.
				f, err := js.PublishAsync(streams.RequestSubject(model), wakeBody(t, id, prompt), jetstream.WithMsgID(id))
				if err != nil {
					f = nil
				}
				futs[k] = f
			}
			var again []int
			for k, f := range futs {
				if f == nil {
					again = append(again, unacked[k])
					continue
				}
				select {
				case <-f.Ok():
				case <-f.Err():
					again = append(again, unacked[k])
				case <-time.After(5 * time.Second):
					again = append(again, unacked[k])
				}
			}
			if len(again) > 0 {
				retries += len(again)
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond): // a publisher's retry pace
				}
			}
			unacked = again
		}
	}
	// Wake-ups flow from a goroutine while the main one restarts the server.
	var published atomic.Int64
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := 0; i < total; i += 50 {
			publish(i, i+50)
			published.Add(50)
		}
	}()
	natstest.Eventually(t, 60*time.Second, func() bool { return published.Load() >= restartAt }, "load under way")
	down := time.Now()
	srv.Shutdown()
	srv.WaitForShutdown()
	srv, err = natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	downMs := time.Since(down).Milliseconds()
	atRestart := published.Load()
	select {
	case <-pubDone:
	case <-ctx.Done():
		t.Fatal("publishing did not finish")
	}
	natstest.Eventually(t, 60*time.Second, func() bool { d, _ := sink.counts(); return d >= total },
		"every stored wake-up hinted after the NATS restart")
	resumeMs := time.Since(down).Milliseconds()
	// The first hint of a wake-up stored after the restart: the instance
	// is back.
	var firstAfter time.Duration
	for _, r := range sink.received() {
		var i int
		if _, err := fmt.Sscanf(r.requestID, "r-%d", &i); err == nil && i >= int(atRestart) &&
			(firstAfter == 0 || r.at.Sub(down) < firstAfter) {
			firstAfter = r.at.Sub(down)
		}
	}
	consumerSettledFor(t, ctx, js, "fr-requests", 30*time.Second)
	settledMs := time.Since(down).Milliseconds()
	alive(t, p)
	p.stop(t)
	distinct, dups := sink.counts()
	for i := range total {
		if sink.count(actions.PrefetchMessageID(fmt.Sprintf("r-%d", i))) == 0 {
			t.Fatalf("wake-up r-%d never hinted", i)
		}
	}
	figure(t, "natsrestart", "wakeups", total, "lost", total-distinct, "duplicates", dups,
		"published_before_restart", atRestart, "server_down_ms", downMs, "publish_retries", retries, "first_new_hint_after_restart_ms", firstAfter.Milliseconds(),
		"all_hinted_ms", resumeMs, "settled_ms", settledMs, "ack_wait_ms", 5000)
}
