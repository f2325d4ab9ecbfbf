package service

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/hintstream/hintstream/streams"
)

func storedJSON(t *testing.T, worker uint64, tokens []uint32) []byte {
	t.Helper()
	local := kvevents.LocalBlockHashes(tokens, 16)
	blocks := make([]schemas.StoredBlock, len(local))
	for i, h := range local {
		blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(i + 1), TokensHash: schemas.BlockHash(h)}
	}
	b, err := json.Marshal(schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 19, point 2: KV events of 100,000 worker ids nobody registered
// (70,000 under the race detector)
// must not blind the index to a real worker, must not be saved in the
// shutdown snapshot, and are counted and sampled to the dead-letter
// stream.
func TestKVEventFloodOfUnregisteredWorkers(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: quiet, SnapshotInterval: time.Hour})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			svc.Stop(context.Background())
		}
	}()

	// Every flood id claims the prompt the real worker holds: were any
	// indexed, it would tie with or beat the real one.
	tokens := promptTokens(64)
	const flood = floodIDs
	for id := uint64(1); id <= flood; id++ {
		if _, err := js.PublishAsync(streams.KVEventSubject(1_000_000+id), storedJSON(t, 1_000_000+id, tokens)); err != nil {
			t.Fatal(err)
		}
		if id%1024 == 0 { // well inside nats.go's 4,000 outstanding async publishes
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()

	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	rec := schemas.WorkerRecord{WorkerID: 7, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}}
	other := schemas.WorkerRecord{WorkerID: 8, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:2"}}
	for _, r := range []schemas.WorkerRecord{rec, other} {
		if err := registry.Put(ctx, kv, r); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return svc.holding.Registered(7) && svc.holding.Registered(8) },
		"workers 7 and 8 registered")
	if _, err := js.Publish(ctx, streams.KVEventSubject(7), storedJSON(t, 7, tokens)); err != nil {
		t.Fatal(err)
	}
	if err := svc.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := svc.Selector.Select(&schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: tokens})
	if err != nil {
		t.Fatal(err)
	}
	if c.Worker.WorkerID != 7 || c.Overlap != 4 {
		t.Fatalf("chose worker %d with overlap %d, want 7 with 4", c.Worker.WorkerID, c.Overlap)
	}
	if n := svc.Index.Stats().Workers; n != 1 {
		t.Fatalf("index tracks %d workers, want 1 (the registered one)", n)
	}
	if st := svc.holding.Stats(); st.Workers > index.DefaultHoldingWorkers {
		t.Fatalf("holding area %+v over its bound", st)
	}
	dropped := metricstest.Get(svc.Counters, "hintstream_kv_events_dropped_total|"+index.ReasonUnknownWorker)
	if dropped < flood-index.DefaultHoldingWorkers {
		t.Fatalf("%d dropped events counted, want at least %d", dropped, flood-index.DefaultHoldingWorkers)
	}
	samples := metricstest.Get(svc.Counters, "hintstream_kv_events_malformed_total|"+index.ReasonUnknownWorker)
	if samples == 0 || samples > dropped/index.DefaultHoldingSampleEvery+1 {
		t.Fatalf("%d dead-letter samples for %d drops", samples, dropped)
	}
	dlq, err := js.Stream(ctx, "HINTSTREAM_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := dlq.GetLastMsgForSubject(ctx, "hintstream.dlq.kv_events"); err != nil ||
		m.Header.Get("Hintstream-Error") != index.ReasonUnknownWorker {
		t.Fatalf("no dead-letter sample with reason %q: %v", index.ReasonUnknownWorker, err)
	}

	// The shutdown snapshot holds the registered worker alone.
	svc.Stop(ctx)
	stopped = true
	obs, err := js.ObjectStore(ctx, snapshots.DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	r, err := obs.Get(ctx, "kv-index/"+streams.DefaultSet().KVEvents.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	saved := index.New()
	if err := saved.ReadSnapshot(r); err != nil {
		t.Fatal(err)
	}
	if ws := saved.Workers(); len(ws) != 1 || ws[0].WorkerID != 7 {
		t.Fatalf("snapshot holds workers %v, want [7]", ws)
	}
}

func promptTokens(n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = uint32(i*7 + 3)
	}
	return t
}
