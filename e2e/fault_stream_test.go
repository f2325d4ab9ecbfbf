package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// warnLines returns the WARN and ERROR lines of a JSON log that contain s.
func warnLines(p *proc, s string) []string {
	var out []string
	for _, l := range p.lines(&p.errs) {
		if (strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`)) && strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestFaultStreamDeleted: under a running instance, wake-ups flow (one
// every 5 ms) while (1) its durable consumer, (2) the whole requests
// stream and (3) the KV-event stream are deleted. Each time it recovers
// by itself with one warning line; every wake-up stored after the
// recovery is hinted, and a recreated stream is read from its start, not
// from the old stream's sequence.
func TestFaultStreamDeleted(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	sink := workerSink(t, ctx, js, 1)
	// Worker 2 holds nothing yet; worker 1's blocks are announced a few
	// times, so the KV-event stream's sequence is well past 1.
	sink2 := workerSink(t, ctx, js, 2)
	for range 5 {
		publishStored(t, ctx, js, 1, seq(3, 64))
	}
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--group", "fs", "--log-format", "json",
		"--prefetch-ttl", "2m", "--snapshot-interval", "0")
	p.waitLine(t, 30*time.Second, "hintstream running")

	// Traffic: a wake-up every 5 ms; the ids the stream stored are kept.
	prompt := seq(3, 64)
	type stored struct {
		id string
		at time.Time
	}
	stop, done := make(chan struct{}), make(chan []stored, 1)
	var stopOnce sync.Once
	halt := func() []stored { stopOnce.Do(func() { close(stop) }); return <-done }
	defer func() {
		select {
		case <-stop:
		default:
			halt()
		}
	}()
	go func() {
		var ok []stored
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- ok
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("d-%d", i)
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			// By hand: each publish's own error tells whether the
			// stream took it while it is being deleted and recreated.
			_, err := js.Publish(pctx, streams.RequestSubject(model), wakeBody(t, id, prompt))
			pcancel()
			if err == nil {
				ok = append(ok, stored{id, time.Now()})
			} else if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("publish %s: %v", id, err)
			}
		}
	}()
	hinted := func(n int) func() bool { return func() bool { d, _ := sink.counts(); return d >= n } }
	natstest.Eventually(t, 30*time.Second, hinted(100), "traffic under way")

	// (1) The durable consumer deleted.
	t1 := time.Now()
	if err := js.DeleteConsumer(ctx, set.Requests.Name, "fs-requests"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return len(warnLines(p, "consumer was deleted")) > 0 },
		"a log line about the recreated consumer")
	base, _ := sink.counts()
	natstest.Eventually(t, 20*time.Second, hinted(base+100), "hints again after the consumer was recreated")
	consumerMs := time.Since(t1).Milliseconds()

	// (2) The requests stream deleted (its consumer with it).
	t2 := time.Now()
	if err := js.DeleteStream(ctx, set.Requests.Name); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return len(warnLines(p, "stream was deleted")) > 0 },
		"a log line about the deleted stream")
	base, _ = sink.counts()
	natstest.Eventually(t, 20*time.Second, hinted(base+100), "hints again after the stream was deleted")
	streamMs := time.Since(t2).Milliseconds()

	// (3) The KV-event stream deleted: recreated, and the first event in
	// the new stream (sequence 1) is applied, not skipped.
	t3 := time.Now()
	if err := js.DeleteStream(ctx, set.KVEvents.Name); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return len(warnLines(p, "stream was deleted")) == 2 },
		"a log line about the deleted KV-event stream")
	p2 := seq(900000, 64)
	publishStored(t, ctx, js, 2, p2)
	// KV events are applied asynchronously: ask until the choice shows it.
	var asked time.Time
	tries := 0
	natstest.Eventually(t, 15*time.Second, func() bool {
		for _, r := range sink2.received() {
			if strings.HasPrefix(r.requestID, "kv-after-") {
				return true
			}
		}
		if time.Since(asked) > 100*time.Millisecond {
			publishRequest(t, ctx, js, wake(fmt.Sprintf("kv-after-%d", tries), "s", p2))
			asked = time.Now()
			tries++
		}
		return false
	}, "worker 2 chosen by its blocks announced in the recreated KV-event stream")
	kvMs := time.Since(t3).Milliseconds()

	ok := halt()
	consumerSettledFor(t, ctx, js, "fs-requests", 30*time.Second)
	alive(t, p)
	// Every wake-up stored once the stream was back is hinted.
	s, err := js.Stream(ctx, set.Requests.Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recreated := info.Created
	lost, after := 0, 0
	for _, o := range ok {
		if o.at.After(recreated.Add(time.Second)) { // stored in the new stream
			after++
			if !sink.has(o.id) {
				lost++
			}
		}
	}
	if after == 0 || lost != 0 {
		t.Fatalf("%d of %d wake-ups stored in the recreated stream were not hinted", lost, after)
	}
	if n := len(warnLines(p, "consumer was deleted")); n != 1 {
		t.Fatalf("%d log lines about the deleted consumer, want 1", n)
	}
	if n := len(warnLines(p, "stream was deleted")); n != 2 {
		t.Fatalf("%d log lines about the deleted streams, want 2", n)
	}
	p.stop(t)
	_, dups := sink.counts()
	figure(t, "stream_deleted", "consumer_recovered_ms", consumerMs, "stream_recovered_ms", streamMs, "kv_stream_recovered_ms", kvMs,
		"stored_after_recreate", after, "lost_after_recreate", lost, "duplicates", dups,
		"warn_lines", len(warnLines(p, "deleted")))
}
