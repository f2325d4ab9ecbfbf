package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// twoWorkers registers workers 1 and 2 with their sinks, each caching the
// blocks of its own prompt, so that every wake-up for prompt i goes to
// worker i.
func twoWorkers(t *testing.T, ctx context.Context, js jetstream.JetStream, a, b *faultSink) (pa, pb []uint32) {
	t.Helper()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	pa, pb = seq(1000, 256), seq(50000, 256)
	for i, w := range []struct {
		sink   *faultSink
		prompt []uint32
	}{{a, pa}, {b, pb}} {
		id := uint64(i + 1)
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
			HintEndpoints: []string{w.sink.ep}}); err != nil {
			t.Fatal(err)
		}
		publishStored(t, ctx, js, id, w.prompt)
	}
	return pa, pb
}

// latencies are the times from each wake-up (its received_at_ms, i.e.
// expires_at - ttl) to its hint reaching the sink, for hints received in
// [from, to).
func latencies(rs []hintRecv, ttl time.Duration, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		if !r.at.Before(from) && r.at.Before(to) {
			out = append(out, r.at.Sub(r.expiresAt.Add(-ttl)))
		}
	}
	return out
}

// TestFaultEndpointDown: worker 1's hint socket is closed for 5 s while
// wake-ups for workers 1 and 2 flow (100/s each), then bound again on the
// same port. Worker 1's hints still within their deadline when it comes
// back are delivered, the rest are dropped and counted (sent + dropped =
// wake-ups, exactly), nothing reaches it after its deadline; worker 2
// gets every hint with its latency unchanged.
func TestFaultEndpointDown(t *testing.T) {
	const ttl = 2 * time.Second
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	a, b := newFaultSink(t, 0), newFaultSink(t, 0)
	pa, pb := twoWorkers(t, ctx, js, a, b)
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--group", "fe", "--log-format", "json",
		"--http-addr", "127.0.0.1:0", "--prefetch-ttl", ttl.String(), "--snapshot-interval", "0")
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")

	// Traffic: one wake-up per worker every 10 ms until stopped.
	pub := newPublisher(t, js)
	stop, stopped := make(chan struct{}), make(chan int)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-stop:
				stopped <- n
				return
			case <-tick.C:
			}
			for _, w := range []struct {
				pre    string
				prompt []uint32
			}{{"a", pa}, {"b", pb}} {
				if err := pub.PublishRequest(ctx, wakeEvent(fmt.Sprintf("%s-%d", w.pre, n), w.prompt)); err != nil {
					t.Errorf("publish: %v", err)
				}
			}
			n++
		}
	}()
	// Baseline: both workers hinted for a while.
	natstest.Eventually(t, 30*time.Second, func() bool { d, _ := a.counts(); return d >= 100 }, "baseline traffic")
	// The fault: worker 1 down for 5 s of wall time while traffic flows.
	downAt := time.Now()
	a.close()
	<-time.After(5 * time.Second)
	a.open()
	upAt := time.Now()
	// Traffic goes on until worker 1 is hinted again, and a bit more.
	natstest.Eventually(t, 30*time.Second, func() bool {
		for _, r := range a.received() {
			if r.at.After(upAt.Add(time.Second)) {
				return true
			}
		}
		return false
	}, "worker 1 hinted again after it came back")
	close(stop)
	n := <-stopped
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	// A last wake-up for worker 1: one PUSH connection is FIFO, so once it
	// arrives everything sent before it has too.
	publishRequest(t, ctx, js, wake("a-last", "s", pa))
	natstest.Eventually(t, 30*time.Second, func() bool { return a.has("a-last") }, "the last wake-up hinted")
	n++ // a-last, counted with worker 1's wake-ups
	epA, epB := a.ep, b.ep
	// Every wake-up settles: worker 2's all hinted, worker 1's sent or
	// dropped, exactly.
	var m map[string]float64
	natstest.Eventually(t, 30*time.Second, func() bool {
		m = scrape(t, addr)
		sentA := series(m, "hintstream_hints_sent_total", "endpoint", epA)
		dropA := sumDropped(m, epA)
		db, _ := b.counts()
		return int(sentA+dropA) == n && db == n-1
	}, "every wake-up hinted or dropped")
	consumerSettledFor(t, ctx, js, "fe-requests", 30*time.Second)

	sentA := int(series(m, "hintstream_hints_sent_total", "endpoint", epA))
	expiredA := int(series(m, "hintstream_hints_dropped_total", "endpoint", epA, "reason", "expired"))
	if d := sumDropped(m, epB); d != 0 {
		t.Fatalf("worker 2 had %v hints dropped while worker 1 was down", d)
	}
	if int(sumDropped(m, epA)) != expiredA {
		t.Fatalf("worker 1's hints dropped for reasons other than expiry: %v", m)
	}
	if expiredA == 0 {
		t.Fatal("no hint for worker 1 was dropped in 5 s down: the fault did not happen")
	}
	recvA := a.received()
	distinctA, dupsA := a.counts()
	if dupsA != 0 {
		t.Fatalf("worker 1 got %d duplicates", dupsA)
	}
	// Nothing late, and nothing that was still useful at the reconnect lost.
	var reconnect time.Time
	late, duringDown := 0, 0
	got := map[string]bool{}
	for _, r := range recvA {
		got[r.requestID] = true
		if r.at.After(r.expiresAt.Add(100 * time.Millisecond)) {
			late++
		}
		if r.at.After(upAt) && (reconnect.IsZero() || r.at.Before(reconnect)) {
			reconnect = r.at
		}
		if r.expiresAt.Add(-ttl).After(downAt) && r.expiresAt.Add(-ttl).Before(upAt) {
			duringDown++ // woken while worker 1 was down, hinted once it was back
		}
	}
	if late != 0 {
		t.Fatalf("%d hints reached worker 1 after their deadline", late)
	}
	missed := 0
	for _, r := range b.received() { // b-i and a-i were published together
		id := "a" + strings.TrimPrefix(r.requestID, "b")
		if r.expiresAt.After(reconnect.Add(200*time.Millisecond)) && !got[id] {
			missed++
			if missed < 5 {
				t.Logf("missed %s: woken %v after up, expires %v after reconnect", id, r.expiresAt.Add(-ttl).Sub(upAt), r.expiresAt.Sub(reconnect))
			}
		}
	}
	if missed != 0 {
		t.Logf("w1 sent %d received %d expired %d", sentA, distinctA, expiredA)
		t.Fatalf("%d of worker 1's wake-ups still within their deadline at the reconnect (%v after up) were not delivered",
			missed, reconnect.Sub(upAt))
	}
	// Worker 2's latency while worker 1 was down, against before.
	before := latencies(b.received(), ttl, time.Time{}, downAt)
	during := latencies(b.received(), ttl, downAt, upAt)
	b50, b99, bmax := durations(before)
	d50, d99, dmax := durations(during)
	if dmax > 1000 {
		t.Fatalf("worker 2's hints took up to %d ms while worker 1 was down (p50 %d, p99 %d; before: p99 %d)", dmax, d50, d99, b99)
	}
	alive(t, p)
	p.stop(t)
	figure(t, "endpoint_down", "down_ms", upAt.Sub(downAt).Milliseconds(), "w1_wakeups", n, "w2_wakeups", n-1,
		"w1_sent", sentA, "w1_received", distinctA, "w1_dropped_expired", expiredA,
		"w1_lost_in_flight", sentA-distinctA, "w1_delivered_from_outage", duringDown,
		"w1_late", late, "w1_reconnect_after_up_ms", reconnect.Sub(upAt).Milliseconds(),
		"w2_dropped", 0, "w2_p50_ms_before", b50, "w2_p99_ms_before", b99, "w2_max_ms_before", bmax,
		"w2_p50_ms_during", d50, "w2_p99_ms_during", d99, "w2_max_ms_during", dmax)
}

// sumDropped adds an endpoint's dropped hints over every reason.
func sumDropped(m map[string]float64, ep string) float64 {
	var n float64
	for k, v := range m {
		if strings.HasPrefix(k, "hintstream_hints_dropped_total{") && strings.Contains(k, fmt.Sprintf("endpoint=%q", ep)) {
			n += v
		}
	}
	return n
}
