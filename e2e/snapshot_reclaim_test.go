package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// TestSnapshotChunksReclaimedAfterSIGKILLs is issue 19's point 7: the
// binary is SIGKILLed during 8 snapshot saves in a row (each kill at a
// save's 12th chunk), which leaves the object store holding far more
// than the one snapshot it names; the next instance purges what the
// interrupted saves left, down to at most 2x one snapshot, and still
// restores the index.
func TestSnapshotChunksReclaimedAfterSIGKILLs(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(4*time.Minute))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	// An index of 4 workers x 60,000 blocks: a snapshot of some MiB, many
	// 128 KiB chunks, so a kill at the first lands mid-save.
	const workers, blocks, perEvent = 4, 60_000, 2_000
	for w := uint64(1); w <= workers; w++ {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: w, Model: "m", KvBlockSize: 16,
			HintEndpoints: []string{"tcp://127.0.0.1:" + strconv.Itoa(int(20000+w))}}); err != nil {
			t.Fatal(err)
		}
		for first := 0; first < blocks; first += perEvent {
			st := &schemas.KvCacheStoreData{}
			if first > 0 {
				p := schemas.BlockHash(w<<32 | uint64(first))
				st.ParentHash = &p
			}
			for i := first; i < first+perEvent; i++ {
				st.Blocks = append(st.Blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(w<<32 | uint64(i+1)),
					TokensHash: schemas.BlockHash(kvevents.LocalBlockHashes([]uint32{uint32(w), uint32(i)}, 2)[0])})
			}
			b, err := json.Marshal(schemas.RouterEvent{WorkerID: w, Event: schemas.KvCacheEvent{EventID: uint64(first/perEvent + 1),
				Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.PublishAsync(streams.KVEventSubject(w), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()

	const bucket = "hintstream_snapshots"
	name := "kv-index/" + streams.DefaultSet().KVEvents.Name
	args := func(grace string) []string {
		return []string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--snapshot-interval", "1s",
			"--snapshot-reclaim-grace", grace}
	}
	// One complete snapshot first.
	p := start(t, args("1h")...)
	p.waitLine(t, 90*time.Second, "index snapshot saved")
	p.stop(t)
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	one := info.Size
	storeBytes := func() uint64 {
		st, err := js.Stream(ctx, "OBJ_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		si, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return si.State.Bytes
	}

	// Eight kills, each at the 12th chunk of a save (of some 30). The
	// grace is long here so that nothing is reclaimed yet: the leak is
	// measured first.
	var seen atomic.Int64
	chunks := make(chan struct{}, 1)
	sub, err := nc.Subscribe("$O."+bucket+".C.>", func(*nats.Msg) {
		if seen.Add(1) != 12 {
			return
		}
		select {
		case chunks <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	const kills = 8
	for i := range kills {
		for len(chunks) > 0 {
			<-chunks
		}
		seen.Store(0)
		p := start(t, args("1h")...)
		select {
		case <-chunks:
		case <-p.done:
			t.Fatalf("kill %d: hintstream exited before saving", i)
		case <-ctx.Done():
			t.Fatalf("kill %d: no snapshot save began", i)
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
	}
	leaked := storeBytes()
	if info, err = obs.GetInfo(ctx, name); err != nil {
		t.Fatal(err)
	}
	one = info.Size
	if leaked <= 2*one {
		t.Fatalf("after %d kills the store holds %d bytes for a %d-byte snapshot: no save was interrupted", kills, leaked, one)
	}

	// The next instance reclaims them (at start-up once they have been idle
	// for the grace, and after its own save) and restores the index.
	p = start(t, args("2s")...)
	loaded := p.waitLine(t, 90*time.Second, "index snapshot loaded")
	var l struct {
		DeviceBlocks int64 `json:"device_blocks"`
	}
	if err := json.Unmarshal([]byte(loaded), &l); err != nil || l.DeviceBlocks != workers*blocks {
		t.Fatalf("snapshot restored %d device blocks (%v), want %d", l.DeviceBlocks, err, workers*blocks)
	}
	p.waitLine(t, 60*time.Second, "hintstream running")
	p.waitLine(t, 60*time.Second, "reclaimed the chunks of interrupted snapshot saves")
	// Every orphan goes once idle for the grace: the store comes down to
	// about one snapshot (the bound is 2x).
	natstest.Eventually(t, 60*time.Second, func() bool { return storeBytes() <= one*11/10 },
		"object store down to one snapshot (%d bytes)", one)
	p.stop(t)
	if info, err = obs.GetInfo(ctx, name); err != nil {
		t.Fatal(err)
	}
	after := storeBytes()
	if after > 2*info.Size {
		t.Fatalf("after stopping, the store holds %d bytes for a %d-byte snapshot", after, info.Size)
	}
	figure(t, "snapshot_reclaim", "kills", kills, "snapshot_bytes", info.Size, "store_bytes_after_kills", leaked,
		"store_bytes_after_reclaim", after)
}
