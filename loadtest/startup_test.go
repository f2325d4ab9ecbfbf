package loadtest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// BenchmarkStartup measures start-up over a KV-event history of
// HINTSTREAM_STARTUP_BLOCKS stored blocks (default 1M; the figure
// is 10M) in Dynamo RouterEvent JSON, 64 workers, 64-block events: once
// replaying the whole stream, once from a snapshot (which a first run
// saved at shutdown) plus the tail. Reports both in seconds and their
// ratio.
//
//	HINTSTREAM_STARTUP_BLOCKS=10000000 go test -run '^$' -bench Startup -benchtime 1x -timeout 60m ./loadtest/
func BenchmarkStartup(b *testing.B) {
	blocks := 1_000_000
	if v := os.Getenv("HINTSTREAM_STARTUP_BLOCKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		blocks = n
	}
	const workers, perEvent = 64, 64
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv)
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		b.Fatal(err)
	}
	// History: each worker stores chains of perEvent blocks, 16 chains in
	// a row from one root prefix, so parents resolve like a real cache.
	tokens := make([]uint32, perEvent*16)
	var published int
	for e := 0; published < blocks; e++ {
		w := uint64(e % workers)
		for i := range tokens {
			tokens[i] = uint32(e*len(tokens) + i)
		}
		local := kvevents.LocalBlockHashes(tokens, 16)
		sb := make([]schemas.StoredBlock, len(local))
		for i, h := range local {
			sb[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(uint64(e)<<20 | uint64(i)), TokensHash: schemas.BlockHash(h)}
		}
		body, _ := json.Marshal(schemas.RouterEvent{WorkerID: w, Event: schemas.KvCacheEvent{EventID: uint64(e/workers + 1),
			Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: sb}}}})
		if _, err := js.PublishAsync(streams.KVEventSubject(w), body); err != nil {
			b.Fatal(err)
		}
		published += len(sb)
		if e%4096 == 4095 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	// Only registered workers are indexed (issue 19).
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		b.Fatal(err)
	}
	for w := range uint64(workers) {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: w, Model: "m", KvBlockSize: 16,
			HintEndpoints: []string{"tcp://127.0.0.1:" + strconv.Itoa(int(20000+w))}}); err != nil {
			b.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	startup := func(snapshots time.Duration) (time.Duration, *service.Service) {
		svc := service.New(service.Config{NATSURL: srv.ClientURL(), Logger: quiet, SnapshotInterval: snapshots})
		t0 := time.Now()
		if err := svc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if got := svc.Index.Stats().DeviceBlocks; got != int64(published) {
			b.Fatalf("index holds %d blocks after start-up, want %d", got, published)
		}
		return took, svc
	}
	b.ResetTimer()
	full, svc := startup(-1) // no snapshots: the whole stream
	svc.Stop(ctx)
	_, svc = startup(time.Hour) // same, then saves a snapshot at shutdown
	svc.Stop(ctx)
	if svc.Counters.SnapshotsSaved.Value() != 1 {
		b.Fatal("no snapshot saved")
	}
	snap, svc := startup(time.Hour)
	if svc.Counters.SnapshotsLoaded.Value() != 1 {
		b.Fatal("the snapshot was not loaded")
	}
	svc.Stop(ctx)
	b.ReportMetric(float64(published), "blocks")
	b.ReportMetric(full.Seconds(), "full-replay-s")
	b.ReportMetric(snap.Seconds(), "snapshot-s")
	b.ReportMetric(full.Seconds()/snap.Seconds(), "speedup")
}
