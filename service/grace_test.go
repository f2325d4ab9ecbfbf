package service

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// TestWorkerGraceKeepsIndexThroughReregistration: a sidecar restart
// deletes the record and writes it again a moment later; the engine's
// cache never changed, so the worker's blocks must survive. Before,
// the delete wiped them (overlap 8 → 0). Meanwhile the worker is not
// chosen.
func TestWorkerGraceKeepsIndexThroughReregistration(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerGrace: time.Minute})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	rec := schemas.WorkerRecord{WorkerID: 5, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}}
	if err := registry.Put(ctx, kv, rec); err != nil {
		t.Fatal(err)
	}
	tokens := make([]uint32, 8*16)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	local := kvevents.LocalBlockHashes(tokens, 16)
	blocks := make([]schemas.StoredBlock, len(local))
	for i, h := range local {
		blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(i + 1), TokensHash: schemas.BlockHash(h)}
	}
	ev, _ := json.Marshal(schemas.RouterEvent{WorkerID: 5, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}})
	if _, err := js.Publish(ctx, streams.KVEventSubject(5), ev); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return svc.Index.Stats().DeviceBlocks == 8 }, "8 blocks indexed")
	if err := kv.Delete(ctx, registry.Key(5)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := svc.Registry().Get(5); return !ok }, "worker 5 left")
	if _, err := svc.Selector.Select(&schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: tokens}); err == nil {
		t.Fatal("a departed worker was chosen during its grace period")
	}
	if n := svc.Index.Stats().DeviceBlocks; n != 8 {
		t.Fatalf("%d blocks after the delete, want 8 kept through the grace period", n)
	}
	if err := registry.Put(ctx, kv, rec); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := svc.Registry().Get(5); return ok }, "worker 5 back")
	c, err := svc.Selector.Select(&schemas.RequestEvent{RequestID: "r2", Model: "m", TokenIDs: tokens})
	if err != nil || c.Worker.WorkerID != 5 || c.Overlap != 8 {
		t.Fatalf("choice %+v, %v; want worker 5 with overlap 8", c, err)
	}
}
