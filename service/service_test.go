package service

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// A worker that leaves the registry must stop attracting hints: its blocks
// and load leave with it, and it is back to zero when it rejoins.
func TestWorkerLeavingDropsItsBlocks(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A short grace: the blocks go once it is over (grace_test.go keeps
	// them through a re-registration).
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerGrace: 200 * time.Millisecond})
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
	// Registered before its events arrive: an unregistered worker's are
	// held, not indexed, until its record is seen.
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := svc.Registry().Get(5); return ok }, "worker 5 registered")
	tokens := make([]uint32, 32)
	local := kvevents.LocalBlockHashes(tokens, 16)
	ev, _ := json.Marshal(schemas.RouterEvent{WorkerID: 5, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: []schemas.StoredBlock{
			{BlockHash: 1, TokensHash: schemas.BlockHash(local[0])}, {BlockHash: 2, TokensHash: schemas.BlockHash(local[1])}}}}}})
	if _, err := js.Publish(ctx, streams.KVEventSubject(5), ev); err != nil {
		t.Fatal(err)
	}
	busy := uint64(3)
	load, _ := json.Marshal(schemas.ActiveLoad{WorkerID: 5, ActiveDecodeBlocks: &busy})
	if _, err := js.Publish(ctx, streams.LoadSubject(5), load); err != nil {
		t.Fatal(err)
	}
	if err := svc.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	key := kvevents.WorkerKey{WorkerID: 5}
	if got := svc.Index.Overlap(kvevents.PromptHashes(tokens, 16))[key]; got != 2 {
		t.Fatalf("overlap %d before leaving, want 2", got)
	}
	if svc.Loads.Get(key).DecodeBlocks() != 3 {
		t.Fatal("load not applied")
	}
	// Give the worker's endpoint an open sender, as a hint would.
	if err := svc.Pool().Send(rec.HintEndpoints[0], actions.Hint{MessageID: "m", Body: []byte{0x80},
		Deadline: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if eps := svc.Pool().Endpoints(); len(eps) != 1 {
		t.Fatalf("open senders %v", eps)
	}
	if err := kv.Delete(ctx, registry.Key(5)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		return svc.Index.Stats().DeviceBlocks == 0 && svc.Loads.Len() == 0
	}, "worker 5's blocks and load dropped after it left the registry")
	natstest.Eventually(t, 5*time.Second, func() bool { return len(svc.Pool().Endpoints()) == 0 },
		"worker 5's hint socket closed after it left the registry")
	if _, err := svc.Selector.Select(&schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: tokens}); err == nil {
		t.Fatal("a departed worker was still chosen")
	}
}

func TestHTTPEndpoints(t *testing.T) {
	svc := startHTTP(t)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + svc.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 || !svc.Ready() {
		t.Fatalf("/readyz %d after Start", code)
	}
	code, body := get("/metrics")
	for _, want := range []string{"hintstream_index_workers", "hintstream_consumer_pending{consumer=\"hintstream-requests\"}", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics (%d) lacks %s", code, want)
		}
	}
	if code, _ := get("/debug/pprof/"); code != 404 {
		t.Fatalf("pprof served without --pprof: %d", code)
	}
}

// A stopped instance leaves a snapshot; the next one loads it and applies
// only the KV events published after it.
func TestSnapshotRestart(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{NATSURL: srv.ClientURL(), Logger: quiet, SnapshotInterval: time.Hour}
	a := New(cfg)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tokens := make([]uint32, 64)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	local := kvevents.LocalBlockHashes(tokens, 16)
	store := func(worker uint64, id uint64, blocks []int, parent *schemas.BlockHash) {
		var sb []schemas.StoredBlock
		for _, i := range blocks {
			sb = append(sb, schemas.StoredBlock{BlockHash: schemas.BlockHash(worker*100 + uint64(i)), TokensHash: schemas.BlockHash(local[i])})
		}
		b, _ := json.Marshal(schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: id,
			Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{ParentHash: parent, Blocks: sb}}}})
		if _, err := js.Publish(ctx, streams.KVEventSubject(worker), b); err != nil {
			t.Fatal(err)
		}
	}
	// Only registered workers are indexed (issue 19).
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{1, 2} {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: "m", KvBlockSize: 16,
			HintEndpoints: []string{"tcp://127.0.0.1:" + strconv.FormatUint(id, 10)}}); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return a.holding.Registered(1) && a.holding.Registered(2) },
		"workers 1 and 2 registered")
	store(1, 1, []int{0, 1}, nil)
	store(2, 1, []int{0, 1, 2}, nil)
	if err := a.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	a.Stop(ctx) // saves the snapshot
	if a.Counters.SnapshotsSaved.Value() != 1 {
		t.Fatalf("no snapshot saved at shutdown: %v", metricstest.Snapshot(a.Counters, "hintstream_snapshots"))
	}
	// Published while no instance runs: the tail.
	parent := schemas.BlockHash(101)
	store(1, 2, []int{2, 3}, &parent)

	b := New(cfg)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop(context.Background())
	if b.Counters.SnapshotsLoaded.Value() != 1 {
		t.Fatal("the snapshot was not loaded")
	}
	if got := b.Counters.KVEventsReceived.Value(); got != 1 {
		t.Fatalf("replayed %d KV events, want only the 1 after the snapshot", got)
	}
	ov := b.Index.Overlap(kvevents.PromptHashes(tokens, 16))
	if ov[kvevents.WorkerKey{WorkerID: 1}] != 4 || ov[kvevents.WorkerKey{WorkerID: 2}] != 3 {
		t.Fatalf("overlap after restart %v, want worker 1: 4 (2 from the snapshot + 2 chained on), worker 2: 3", ov)
	}
}

// A NATS server restart (same port, same store) under a running instance:
// it reconnects and the next wake-up is hinted, without a restart.
func TestNATSRestartRecovered(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The wake-up waits out the reconnect (a couple of seconds): give it a
	// prefetch life longer than that.
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SnapshotInterval: -1, Decisions: engine.Decisions{PrefetchTTL: time.Minute}})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())

	pull, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	_ = pull.SetRcvtimeo(20 * time.Second)
	_ = pull.SetLinger(0)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, _ := pull.GetLastEndpoint()
	kv, err := registry.Bucket(ctx, svc.JetStream(), registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{ep}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return len(svc.Registry().Workers()) == 1 }, "worker registered")

	srv.Shutdown()
	srv.WaitForShutdown()
	srv, err = natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	b, _ := json.Marshal(schemas.RequestEvent{RequestID: "after-restart", Model: "m", TokenIDs: make([]uint32, 16),
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}, ReceivedAtMs: time.Now().UnixMilli()})
	// The request may be published before the instance has reconnected;
	// the durable consumer holds it until then.
	if _, err := js.Publish(ctx, streams.RequestSubject("m"), b); err != nil {
		t.Fatal(err)
	}
	msg, err := pull.RecvBytes(0)
	if err != nil {
		c, cerr := js.Consumer(ctx, "LLM_REQUESTS", "hintstream-requests")
		if cerr == nil {
			info, _ := c.Info(ctx)
			t.Logf("consumer: pending %d ackpending %d waiting %d delivered %+v", info.NumPending, info.NumAckPending, info.NumWaiting, info.Delivered)
		} else {
			t.Logf("consumer: %v", cerr)
		}
		t.Fatalf("no hint after the NATS restart: %v; counters %v", err, metricstest.Snapshot(svc.Counters, ""))
	}
	var env schemas.KvHintsEnvelope
	if _, err := env.UnmarshalMsg(msg); err != nil || env.MessageID != actions.PrefetchMessageID("after-restart") {
		t.Fatalf("hint %q: %v", env.MessageID, err)
	}
}
