package service

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestReplicasOfBucketsAndObjectStore: with Placement R3 on a real
// 3-node cluster, every KV bucket hintstream creates (registry, request
// index, pins) and the snapshot object store have three replicas, as do
// the streams.
func TestReplicasOfBucketsAndObjectStore(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	_, js := c.Connect(1)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	p := streams.Placement{Replicas: 3}
	// Warnings reach the test's output: a cluster slow to place R3 says so.
	warnLog := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc := New(Config{NATSURL: c.URLs(0), Logger: warnLog, Streams: streams.DefaultSet().Apply(p), Placement: p,
		PinEndpoint: "tcp://127.0.0.1:1", SnapshotInterval: time.Hour})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	for _, b := range []string{registry.DefaultBucket, pins.DefaultRequestIndexBucket, pins.DefaultPinSlotBucket} {
		kv, err := js.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; n != 3 {
			t.Errorf("bucket %s: %d replicas, want 3", b, n)
		}
	}
	obs, err := js.ObjectStore(ctx, snapshots.DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Replicas(); n != 3 {
		t.Errorf("object store: %d replicas, want 3", n)
	}
	for _, name := range []string{"LLM_REQUESTS", "KV_EVENTS", "KV_LOAD"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.CachedInfo().Config.Replicas; n != 3 {
			t.Errorf("stream %s: %d replicas, want 3", name, n)
		}
	}
}

// TestModelsRestrictIndexAndChoices: a member started with Models ["a"]
// indexes only model a's workers' KV events (a worker of model b that
// published first and registered later ends up out of the index), and
// chooses only among model a's workers even for a request naming no
// model.
func TestModelsRestrictIndexAndChoices(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	recs := []schemas.WorkerRecord{
		{WorkerID: 1, Model: "a", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:11"}},
		{WorkerID: 2, Model: "b", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:12"}},
	}
	for _, r := range recs {
		if err := registry.Put(ctx, kv, r); err != nil {
			t.Fatal(err)
		}
	}
	tokens := make([]uint32, 32)
	local := kvevents.LocalBlockHashes(tokens, 16)
	stored := func(worker uint64) {
		t.Helper()
		ev, _ := json.Marshal(schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: 1,
			Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: []schemas.StoredBlock{
				{BlockHash: 1, TokensHash: schemas.BlockHash(local[0])}, {BlockHash: 2, TokensHash: schemas.BlockHash(local[1])}}}}}})
		if _, err := js.Publish(ctx, streams.KVEventSubject(worker), ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := streams.Ensure(ctx, js, streams.DefaultSet().KVEvents); err != nil {
		t.Fatal(err)
	}
	for _, w := range []uint64{1, 2, 3} { // 3: not registered yet
		stored(w)
	}
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: quietLog, Models: []string{"a"}, SnapshotInterval: -1})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	ov := svc.Index.Overlap(kvevents.PromptHashes(tokens, 16))
	if ov[kvevents.WorkerKey{WorkerID: 1}] != 2 {
		t.Errorf("served worker 1: overlap %d, want 2", ov[kvevents.WorkerKey{WorkerID: 1}])
	}
	if _, ok := ov[kvevents.WorkerKey{WorkerID: 2}]; ok {
		t.Error("worker 2 (model b) indexed")
	}
	// Worker 3 is not registered yet: its events are kept (indexed here;
	// held aside where only registered workers are indexed), since they
	// may precede its record.
	if got := metricstest.Snapshot(svc.Counters, "")["hintstream_kv_events_skipped_model_total"]; got != 1 {
		t.Errorf("skipped_model %d, want 1", got)
	}
	// Worker 3 registers as model b: dropped from the index.
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 3, Model: "b", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:13"}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, ok := svc.Index.Overlap(kvevents.PromptHashes(tokens, 16))[kvevents.WorkerKey{WorkerID: 3}]
		return !ok
	}, "worker 3 dropped once it registers as model b")
	for _, model := range []string{"", "a", "b"} {
		cands := svc.Selector.Candidates(&schemas.RequestEvent{RequestID: "r", Model: model, TokenIDs: tokens})
		for _, c := range cands {
			if c.Worker.WorkerID != 1 {
				t.Errorf("request for model %q: candidate worker %d, only worker 1 serves a", model, c.Worker.WorkerID)
			}
		}
		if model != "b" && len(cands) != 1 {
			t.Errorf("request for model %q: %d candidates, want worker 1", model, len(cands))
		}
	}
	if got := svc.consumerFilter([]string{"llm.requests.>"}, streams.RequestPrefix); len(got) != 1 || got[0] != "llm.requests.a" {
		t.Errorf("requests filter %v, want [llm.requests.a]", got)
	}
}
