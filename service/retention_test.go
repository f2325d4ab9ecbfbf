package service

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hintstream/hintstream/internal/metricstest"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// churn publishes KV events of a few workers storing and removing whole
// prompts from a fixed set, so the index stays bounded while the stream
// would grow without end.
type churn struct {
	t       *testing.T
	js      jetstream.JetStream
	rng     *rand.Rand
	prompts [][]uint32
	held    map[uint64]map[int]bool // worker -> prompts held
	eventID map[uint64]uint64
	bytes   int64
}

const churnBlock = 16

func newChurn(t *testing.T, js jetstream.JetStream, workers, prompts int) *churn {
	c := &churn{t: t, js: js, rng: rand.New(rand.NewPCG(15, 15)), held: map[uint64]map[int]bool{}, eventID: map[uint64]uint64{}}
	for p := range prompts {
		toks := make([]uint32, 4*churnBlock)
		for j := range toks {
			toks[j] = uint32(p*1000 + j)
		}
		c.prompts = append(c.prompts, toks)
	}
	for w := 1; w <= workers; w++ {
		c.held[uint64(w)] = map[int]bool{}
	}
	return c
}

// step publishes one event of a random worker: store a prompt it lacks or
// remove one it holds.
func (c *churn) step(ctx context.Context) jetstream.PubAckFuture {
	w := uint64(c.rng.IntN(len(c.held)) + 1)
	p := c.rng.IntN(len(c.prompts))
	seqs := kvevents.PromptHashes(c.prompts[p], churnBlock)
	c.eventID[w]++
	ev := schemas.RouterEvent{WorkerID: w, Event: schemas.KvCacheEvent{EventID: c.eventID[w]}}
	if c.held[w][p] {
		delete(c.held[w], p)
		rm := &schemas.KvCacheRemoveData{}
		for _, s := range seqs {
			rm.BlockHashes = append(rm.BlockHashes, schemas.BlockHash(s))
		}
		ev.Event.Data = schemas.KvCacheEventData{Kind: schemas.KindRemoved, Removed: rm}
	} else {
		c.held[w][p] = true
		local := kvevents.LocalBlockHashes(c.prompts[p], churnBlock)
		st := &schemas.KvCacheStoreData{}
		for i, s := range seqs {
			st.Blocks = append(st.Blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(s), TokensHash: schemas.BlockHash(local[i])})
		}
		ev.Event.Data = schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		c.t.Fatal(err)
	}
	c.bytes += int64(len(b))
	f, err := c.js.PublishAsync(streams.KVEventSubject(w), b)
	if err != nil {
		c.t.Fatal(err)
	}
	return f
}

// sameIndex compares two indexes entry by entry over every block the
// churn can produce: which workers hold it, and each worker's last event.
func (c *churn) sameIndex(t *testing.T, a, b *index.Memory) int {
	t.Helper()
	entries := 0
	for _, toks := range c.prompts {
		for _, s := range kvevents.PromptHashes(toks, churnBlock) {
			oa, ob := a.Overlap([]uint64{s}), b.Overlap([]uint64{s})
			if fmt.Sprint(oa) != fmt.Sprint(ob) {
				t.Fatalf("block %x: live index has %v, fresh member %v", s, oa, ob)
			}
			entries += len(oa)
		}
	}
	for w := range c.held {
		k := kvevents.WorkerKey{WorkerID: w}
		ia, oka := a.LastEventID(k)
		ib, okb := b.LastEventID(k)
		if ia != ib || oka != okb {
			t.Fatalf("worker %d: last event %d/%v live, %d/%v fresh", w, ia, oka, ib, okb)
		}
	}
	if sa, sb := a.Stats(), b.Stats(); sa.DeviceBlocks != sb.DeviceBlocks || sa.Workers != sb.Workers {
		t.Fatalf("stats: live %+v, fresh %+v", sa, sb)
	}
	return entries
}

// TestRetentionCompressedTime runs hours of retention in seconds: the
// requests stream keeps 1.5s (2h in production), the KV-event stream is
// purged behind snapshots taken every 300ms keeping 1s (5m and 15m). While
// events keep flowing, the streams' bytes level off; afterwards a fresh
// member, starting from the snapshot plus the short tail the purge left,
// has the live member's index entry by entry.
func TestRetentionCompressedTime(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	set := streams.DefaultSet()
	for _, c := range []*streams.Config{&set.Requests, &set.Responses} {
		c.MaxAge, c.Duplicates = 1500*time.Millisecond, 500*time.Millisecond
	}
	cfg := Config{NATSURL: srv.ClientURL(), Logger: quietLog, Streams: set,
		SnapshotInterval: 300 * time.Millisecond, KVEventsKeep: time.Second}
	live := New(cfg)
	if err := live.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer live.Stop(context.Background())

	// Only registered workers are indexed (issue 19): register the churn's.
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 4; id++ {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: "m", KvBlockSize: churnBlock,
			HintEndpoints: []string{"tcp://127.0.0.1:" + strconv.FormatUint(id, 10)}}); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		return live.holding.Registered(1) && live.holding.Registered(2) && live.holding.Registered(3) && live.holding.Registered(4)
	}, "the churn's workers registered")
	c := newChurn(t, js, 4, 40)
	bytesOf := func(name string) uint64 {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().State.Bytes
	}
	type sample struct {
		kvPub, reqPub int64
		kv, req       uint64
	}
	var samples []sample
	var reqBytes int64
	const run, rate = 8 * time.Second, 300 // events and requests per second
	start := time.Now()
	tick := time.NewTicker(time.Second / 20)
	defer tick.Stop()
	for n := 0; time.Since(start) < run; n++ {
		<-tick.C
		var futs []jetstream.PubAckFuture
		for range rate / 20 {
			futs = append(futs, c.step(ctx))
			body := fmt.Sprintf(`{"request_id":"r-%d-%d","model":"m","token_ids":[1,2,3]}`, n, len(futs))
			reqBytes += int64(len(body))
			f, err := js.PublishAsync(streams.RequestSubject("m"), []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			futs = append(futs, f)
		}
		for _, f := range futs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatal(err)
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
		if n%5 == 0 {
			samples = append(samples, sample{c.bytes, reqBytes, bytesOf("KV_EVENTS"), bytesOf("LLM_REQUESTS")})
		}
	}
	last, mid := samples[len(samples)-1], samples[len(samples)/2]
	t.Logf("published: kv %d B, requests %d B; in the streams at the end: kv %d B, requests %d B; at mid-run kv %d B, requests %d B",
		last.kvPub, last.reqPub, last.kv, last.req, mid.kv, mid.req)
	for _, s := range []struct {
		name              string
		pub, held         int64
		pubHalf, heldHalf int64
	}{
		{"KV_EVENTS", last.kvPub, int64(last.kv), last.kvPub - mid.kvPub, int64(last.kv) - int64(mid.kv)},
		{"LLM_REQUESTS", last.reqPub, int64(last.req), last.reqPub - mid.reqPub, int64(last.req) - int64(mid.req)},
	} {
		// Unbounded, a stream would hold all it was sent and grow by all
		// of the second half's bytes.
		if s.held > s.pub/2 {
			t.Errorf("%s holds %d B of the %d B published: not levelling off", s.name, s.held, s.pub)
		}
		if s.heldHalf > s.pubHalf/2 {
			t.Errorf("%s grew by %d B in the second half, of %d B published then", s.name, s.heldHalf, s.pubHalf)
		}
	}

	// Compaction: wait until the live member has applied everything, saved
	// a snapshot of it, and the purge has run behind it.
	if err := live.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	kvStream, err := js.Stream(ctx, "KV_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	lastSeq := kvStream.CachedInfo().State.LastSeq
	natstest.Eventually(t, 20*time.Second, func() bool { return live.lastSnapshot.Load() >= lastSeq },
		"a snapshot covering seq %d", lastSeq)
	info, err := kvStream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq <= 1 || metricstest.Snapshot(live.Counters, "")["hintstream_kv_events_purged_total"] == 0 {
		t.Fatalf("KV_EVENTS not compacted: first seq %d, purged %d", info.State.FirstSeq, metricstest.Snapshot(live.Counters, "")["hintstream_kv_events_purged_total"])
	}
	t.Logf("KV_EVENTS after compaction: seqs %d..%d (%d messages, %d B) of %d published",
		info.State.FirstSeq, info.State.LastSeq, info.State.Msgs, info.State.Bytes, lastSeq)

	freshCfg := cfg
	freshCfg.SnapshotInterval = time.Hour // loads the snapshot, writes none during the test
	fresh := New(freshCfg)
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop(context.Background())
	if metricstest.Snapshot(fresh.Counters, "")["hintstream_snapshots_loaded_total"] != 1 {
		t.Fatal("fresh member did not start from the snapshot")
	}
	n := c.sameIndex(t, live.Index, fresh.Index)
	if n == 0 {
		t.Fatal("compared an empty index")
	}
	t.Logf("fresh member equals the live one over %d (block, worker) entries", n)
}

// TestForeignKVStreamNeverPurged: a KV-event stream hintstream attached to
// but did not create (Dynamo's) keeps every message however many
// snapshots are saved.
func TestForeignKVStreamNeverPurged(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_EVENTS", Subjects: []string{"kv.events.>"}}); err != nil {
		t.Fatal(err)
	}
	c := newChurn(t, js, 2, 5)
	for range 50 {
		<-c.step(ctx).Ok()
	}
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: quietLog, SnapshotInterval: 100 * time.Millisecond, KVEventsKeep: time.Nanosecond})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	for n := range 2 {
		for range 50 {
			<-c.step(ctx).Ok()
		}
		natstest.Eventually(t, 20*time.Second, func() bool {
			return metricstest.Snapshot(svc.Counters, "")["hintstream_snapshots_saved_total"] >= uint64(n+1)
		},
			"snapshot %d saved", n+1)
	}
	natstest.Eventually(t, 5*time.Second, svc.purgeOff.Load, "the stream found foreign")
	st, err := js.Stream(ctx, "KV_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if s := st.CachedInfo().State; s.Msgs != 150 || s.FirstSeq != 1 {
		t.Fatalf("foreign stream changed: %d messages from seq %d, want 150 from 1", s.Msgs, s.FirstSeq)
	}
}
