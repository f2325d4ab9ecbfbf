package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// TestAffinityTurns (issue 26, finding 9): the frontend asks for a
// turn's worker within 1 ms of publishing its wake-up; sessions whose
// turns overlap (the next wake-up before the last turn) and forks (two
// branches of one session woken at once) each find the worker their own
// wake-up's prefetch went to; a worker that left the registry is not
// preferred, nor one whose endpoint is down (its prefetch never left).
func TestAffinityTurns(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	sink := pypeer.StartSink(t, 2)
	eps := sink.Endpoints()
	reg, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := registry.Put(ctx, reg, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[id-1]}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	// Worker 3 is registered but nobody listens on its endpoint.
	down := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	if err := registry.Put(ctx, reg, schemas.WorkerRecord{WorkerID: 3, Model: model, KvBlockSize: 16, HintEndpoints: []string{down}}); err != nil {
		t.Fatal(err)
	}
	// Prompts of prefix a are cached on worker 1, of prefix b on worker 2,
	// of prefix c on worker 3.
	a, b, c := seq(100, 6*16), seq(5000, 6*16), seq(20000, 6*16)
	publishStored(t, ctx, js, 3, c[:4*16])
	publishStored(t, ctx, js, 1, a[:4*16])
	publishStored(t, ctx, js, 2, b[:4*16])
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--prefetch-ttl", "5s", "--http-addr", "127.0.0.1:0", "--log-format", "json")
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	aff, err := client.OpenAffinity(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	workerOf := map[string]uint64{eps[0]: 1, eps[1]: 2}
	// Let the index catch up with the stored blocks.
	publishRequest(t, ctx, js, wake("warm", "s-warm", b))
	sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool {
		r := byRequest(ms, "warm")
		return len(r) > 0 && r[0].Endpoint == eps[1]
	}, "the warm-up prefetch on worker 2")

	ask := func(session, id string) uint64 {
		t.Helper()
		pref, err := aff.AwaitPreferred(ctx, session, id, 2*time.Second)
		if err != nil {
			t.Fatalf("%s/%s: %v", session, id, err)
		}
		return pref.WorkerID
	}
	// Turns within 1 ms of their wake-up: the ask starts right after the
	// publish returns.
	const quick = 40
	for i := range quick {
		prompt := a
		if i%2 == 1 {
			prompt = b
		}
		id, s := fmt.Sprintf("q-%d", i), fmt.Sprintf("quick-%d", i)
		publishRequest(t, ctx, js, wake(id, s, prompt))
		got := ask(s, id)
		if want := uint64(1 + i%2); got != want {
			t.Fatalf("%s: preferred worker %d, want %d", id, got, want)
		}
	}
	// Overlapping turns: the session's second wake-up comes before the
	// first turn asks.
	publishRequest(t, ctx, js, wake("ov-1", "overlap", a))
	publishRequest(t, ctx, js, wake("ov-2", "overlap", b))
	if w1, w2 := ask("overlap", "ov-2"), ask("overlap", "ov-1"); w1 != 2 || w2 != 1 {
		t.Fatalf("overlapping turns: ov-2 -> %d (want 2), ov-1 -> %d (want 1)", w1, w2)
	}
	// A fork: two branches of one session, woken together, diverging
	// after a shared prefix.
	fa := append(append([]uint32(nil), a...), seq(9000, 32)...)
	fb := append(append([]uint32(nil), b...), seq(9500, 32)...)
	publishRequest(t, ctx, js, wake("fork-a", "forked", fa))
	publishRequest(t, ctx, js, wake("fork-b", "forked", fb))
	if wa, wb := ask("forked", "fork-a"), ask("forked", "fork-b"); wa != 1 || wb != 2 {
		t.Fatalf("fork: fork-a -> %d (want 1), fork-b -> %d (want 2)", wa, wb)
	}
	// Every answer is where the prefetch actually went.
	for id, want := range map[string]uint64{"ov-1": 1, "ov-2": 2, "fork-a": 1, "fork-b": 2, "q-0": 1, "q-1": 2} {
		sink.WaitFor(t, 5*time.Second, hasRequest(id), "prefetch "+id)
		if got := workerOf[byRequest(sink.Messages(), id)[0].Endpoint]; got != want {
			t.Fatalf("prefetch %s went to worker %d, the record says %d", id, got, want)
		}
	}
	// A worker whose endpoint is down: the session's earlier wake-up went
	// to worker 1; its next one is chosen for worker 3 and queued, but
	// ZMQ never takes it. Once the sender has retried it (the choice is
	// made and the prefetch is in the pool), the session still prefers
	// worker 1, and the new wake-up has no preferred worker.
	publishRequest(t, ctx, js, wake("dn-1", "down", a))
	if got := ask("down", "dn-1"); got != 1 {
		t.Fatalf("dn-1: preferred worker %d, want 1", got)
	}
	publishRequest(t, ctx, js, wake("dn-2", "down", c))
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, addr), "hintstream_hints_retried_total", "endpoint", down) >= 3
	}, "the prefetch to the down endpoint retried")
	if pref, err := aff.PreferredWorker(ctx, "down"); err != nil || pref.WorkerID != 1 {
		t.Fatalf("session with an undelivered prefetch: preferred %+v, %v; want worker 1", pref, err)
	}
	if pref, err := aff.PreferredWorkerFor(ctx, "down", "dn-2"); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("undelivered prefetch dn-2: preferred %+v, %v; want ErrNoPreference", pref, err)
	}
	if pref, err := aff.AwaitPreferred(ctx, "down", "dn-2", 200*time.Millisecond); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("undelivered prefetch dn-2 after waiting: preferred %+v, %v; want ErrNoPreference", pref, err)
	}
	// A worker that left is not preferred.
	if err := reg.Delete(ctx, strconv.Itoa(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := aff.PreferredWorkerFor(ctx, "overlap", "ov-1"); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("preferred a worker that left: %v", err)
	}
	if _, err := aff.PreferredWorker(ctx, "quick-0"); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("PreferredWorker gave a worker that left: %v", err)
	}
	if pref, err := aff.PreferredWorkerFor(ctx, "overlap", "ov-2"); err != nil || pref.WorkerID != 2 {
		t.Fatalf("registered worker 2: %+v %v", pref, err)
	}
}
