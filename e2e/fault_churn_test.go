package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// churnWorker is one simulated worker: its hint socket, its prompt (whose
// blocks it caches while up) and its KV event ids.
type churnWorker struct {
	id      uint64
	sink    *faultSink
	prompt  []uint32
	eventID uint64
}

func (w *churnWorker) record() schemas.WorkerRecord {
	return schemas.WorkerRecord{WorkerID: w.id, Model: model, KvBlockSize: 16, HintEndpoints: []string{w.sink.ep}}
}

// kvEvent publishes one of w's KV events: its prompt's blocks stored, or
// everything cleared (an engine restart).
func (w *churnWorker) kvEvent(t *testing.T, ctx context.Context, js jetstream.JetStream, cleared bool) {
	t.Helper()
	w.eventID++
	data := schemas.KvCacheEventData{Kind: schemas.KindCleared}
	if !cleared {
		local := kvevents.LocalBlockHashes(w.prompt, 16)
		blocks := make([]schemas.StoredBlock, len(local))
		for i, h := range local {
			blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(w.id<<32 | uint64(i+1)), TokensHash: schemas.BlockHash(h)}
		}
		data = schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}
	}
	publishJSON(t, ctx, js, streams.KVEventSubject(w.id), schemas.RouterEvent{WorkerID: w.id,
		Event: schemas.KvCacheEvent{EventID: w.eventID, Data: data}})
}

// TestFaultRegistryChurn: four workers, each caching its own prompt, get
// a wake-up every 5 ms while, every 50 ms for 3 s, one of them leaves the
// registry, joins again (with its blocks), or restarts (all blocks
// cleared, then stored again). hintstream keeps consuming without a
// stall, every wake-up is accounted for exactly (hint queued, or skipped
// with a reason), every queued hint is sent or dropped with a reason,
// and once the churn stops each prompt goes to its own worker again.
func TestFaultRegistryChurn(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]*churnWorker, 4)
	for i := range ws {
		ws[i] = &churnWorker{id: uint64(i + 1), sink: newFaultSink(t, 0), prompt: seq(uint32(100000*(i+1)), 128)}
		if err := registry.Put(ctx, kv, ws[i].record()); err != nil {
			t.Fatal(err)
		}
		ws[i].kvEvent(t, ctx, js, false)
	}
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--group", "fc", "--log-format", "json",
		"--snapshot-interval", "0")
	p.waitLine(t, 30*time.Second, "hintstream running")

	// Traffic: a wake-up every 5 ms, round robin over the prompts.
	pub := newPublisher(t, js)
	stop, stopped := make(chan struct{}), make(chan int, 1)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-stop:
				stopped <- n
				return
			case <-tick.C:
			}
			if err := pub.PublishRequest(ctx, wakeEvent(fmt.Sprintf("c-%d", n), ws[n%len(ws)].prompt)); err != nil {
				t.Errorf("publish: %v", err)
			}
			n++
		}
	}()
	halted := false
	halt := func() int {
		if halted {
			return 0
		}
		halted = true
		close(stop)
		return <-stopped
	}
	defer halt()

	// The churn, one step every 50 ms for 3 s (this pace is the fault).
	up := []bool{true, true, true, true}
	var leaves, joins, restarts int
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(3 * time.Second)
churn:
	for step := 0; ; step++ {
		select {
		case <-end.C:
			break churn
		case <-tick.C:
		}
		w := ws[step%len(ws)]
		i := step % len(ws)
		switch {
		case up[i] && step%3 == 0: // leave
			if err := kv.Delete(ctx, registry.Key(w.id)); err != nil {
				t.Fatal(err)
			}
			up[i] = false
			leaves++
		case up[i]: // restart: its cache is empty, then refilled
			w.kvEvent(t, ctx, js, true)
			w.kvEvent(t, ctx, js, false)
			restarts++
		default: // join again
			if err := registry.Put(ctx, kv, w.record()); err != nil {
				t.Fatal(err)
			}
			w.kvEvent(t, ctx, js, false)
			up[i] = true
			joins++
		}
	}
	// Everyone back, with their blocks.
	for i, w := range ws {
		if !up[i] {
			if err := registry.Put(ctx, kv, w.record()); err != nil {
				t.Fatal(err)
			}
			w.kvEvent(t, ctx, js, false)
			joins++
		}
	}
	n := halt()
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	consumerSettledFor(t, ctx, js, "fc-requests", 30*time.Second)
	alive(t, p)
	// After the churn each prompt goes to its own worker.
	for _, w := range ws {
		id := fmt.Sprintf("after-%d", w.id)
		var asked time.Time
		natstest.Eventually(t, 15*time.Second, func() bool {
			for _, o := range ws {
				if o != w && o.sink.has(id) {
					t.Fatalf("wake-up for worker %d's prompt went to worker %d after the churn", w.id, o.id)
				}
			}
			if w.sink.has(id) {
				return true
			}
			// The registry and KV events are applied asynchronously: ask
			// again until the index has caught up.
			if time.Since(asked) > 200*time.Millisecond {
				republishRequest(t, ctx, js, wake(id, "s", w.prompt))
				asked = time.Now()
			}
			return false
		}, "worker %d hinted for its prompt after the churn", w.id)
	}
	consumerSettledFor(t, ctx, js, "fc-requests", 30*time.Second)
	p.stop(t)

	c := finalCounters(t, p)
	wakeups, queued := c["hintstream_requests_wakeup_total"], c["hintstream_hints_prefetch_queued_total"]
	skipped, dropped := c["hintstream_hints_prefetch_skipped_total"], c["hintstream_hints_prefetch_dropped_total"]
	if wakeups < float64(n) || wakeups != queued+skipped+dropped {
		t.Fatalf("wake-ups not accounted for: %v published, %v consumed = %v queued + %v skipped + %v not queued",
			n, wakeups, queued, skipped, dropped)
	}
	var sent, poolDropped float64
	for _, st := range finalEndpoints(t, p) {
		sent += st.Sent
		for _, d := range st.Dropped {
			poolDropped += d
		}
	}
	if sent+poolDropped != queued {
		t.Fatalf("queued hints not accounted for: %v queued, %v sent + %v dropped", queued, sent, poolDropped)
	}
	received := 0
	for _, w := range ws {
		d, _ := w.sink.counts()
		received += d
	}
	figure(t, "registry_churn", "wakeups", int(wakeups), "leaves", leaves, "joins", joins, "restarts", restarts,
		"queued", int(queued), "skipped_no_worker", int(c["hintstream_hints_prefetch_skipped_total|no_worker"]),
		"skipped_other", int(skipped-c["hintstream_hints_prefetch_skipped_total|no_worker"]), "not_queued", int(dropped),
		"sent", int(sent), "sender_dropped", int(poolDropped), "received", received,
		"lost_unaccounted", int(wakeups-queued-skipped-dropped))
}

// endpointStats is the part of zmqsend.EndpointStats the stop log holds.
type endpointStats struct {
	Sent    float64
	Dropped map[string]float64
}

// finalEndpoints reads the per-endpoint sender stats hintstream logs when
// it stops.
func finalEndpoints(t *testing.T, p *proc) map[string]endpointStats {
	t.Helper()
	for _, l := range p.lines(&p.errs) {
		var rec struct {
			Msg       string                   `json:"msg"`
			Endpoints map[string]endpointStats `json:"endpoints"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "stopped" {
			return rec.Endpoints
		}
	}
	t.Fatal("no final endpoint stats in hintstream's log")
	return nil
}
