package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go/jetstream"
)

// changes records what a live registry saw, with the time it saw it.
type changes struct {
	mu  sync.Mutex
	got []registry.Change
	at  []time.Time
}

func (c *changes) add(ch registry.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got, c.at = append(c.got, ch), append(c.at, time.Now())
}

func (c *changes) deletedAt(id uint64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ch := range c.got {
		if ch.Kind == registry.Deleted && ch.WorkerID == id {
			return c.at[i], true
		}
	}
	return time.Time{}, false
}

func openRegistry(t *testing.T, js jetstream.JetStream) (*registry.Registry, *changes) {
	t.Helper()
	c := &changes{}
	reg, err := registry.Open(context.Background(), js, registry.WithOnChange(c.add))
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, reg.Run)
	return reg, c
}

// TestRegisterRecordExpiresWithoutRefresh: a record whose Register died
// leaves the live registry within TTLIntervals intervals of its last
// refresh, with nobody deleting it.
func TestRegisterRecordExpiresWithoutRefresh(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	reg, seen := openRegistry(t, js)
	const interval = time.Second
	var last atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	rec := schemas.WorkerRecord{WorkerID: 7, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:5570"}}
	go func() {
		done <- Register(ctx, js, func(context.Context) (schemas.WorkerRecord, error) { return rec, nil },
			WithInterval(interval), WithKeepOnExit(true), // keep: stands in for a crash
			WithOnRefresh(func(schemas.WorkerRecord) { last.Store(time.Now().UnixNano()) }))
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { _, ok := reg.Get(7); return ok }, "worker 7 registered")
	// Survives several intervals: the refreshes keep it.
	natstest.Eventually(t, 10*time.Second, func() bool {
		return last.Load() > 0 && time.Since(time.Unix(0, last.Load())) < interval/2 && func() bool {
			_, ok := reg.Get(7)
			return ok
		}()
	}, "refreshed")
	if _, gone := seen.deletedAt(7); gone {
		t.Fatal("worker 7 left while Register was refreshing it")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lastRefresh := time.Unix(0, last.Load())
	natstest.Eventually(t, 10*time.Second, func() bool { _, ok := seen.deletedAt(7); return ok }, "worker 7 expired")
	at, _ := seen.deletedAt(7)
	// The server counts TTLs in seconds and sweeps expired messages on
	// its own timer: allow one second past the TTL.
	if d := at.Sub(lastRefresh); d > TTLIntervals*interval+time.Second || d < TTLIntervals*interval-interval {
		t.Fatalf("worker 7 left %v after its last refresh, want about %v", d, TTLIntervals*interval)
	}
	if _, ok := reg.Get(7); ok {
		t.Fatal("expired worker still in the registry")
	}
}

func TestRegisterReplacesRecordAndDeletesAtExit(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	reg, seen := openRegistry(t, js)
	var mu sync.Mutex
	rec := schemas.WorkerRecord{WorkerID: 3, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:5570"},
		ObjectLayout: &schemas.ObjectLayout{PageSize: 64}}
	src := func(context.Context) (schemas.WorkerRecord, error) {
		mu.Lock()
		defer mu.Unlock()
		return rec, nil
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Register(ctx, js, src, WithInterval(MinRegisterInterval)) }()
	natstest.Eventually(t, 10*time.Second, func() bool {
		r, ok := reg.Get(3)
		return ok && r.ObjectLayout != nil && r.ObjectLayout.PageSize == 64
	}, "worker 3 with page size 64")
	mu.Lock()
	rec.ObjectLayout = &schemas.ObjectLayout{PageSize: 32} // restarted with a new layout
	mu.Unlock()
	natstest.Eventually(t, 10*time.Second, func() bool {
		r, ok := reg.Get(3)
		return ok && r.ObjectLayout != nil && r.ObjectLayout.PageSize == 32
	}, "worker 3's record replaced")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := seen.deletedAt(3); return ok }, "record deleted at exit")
	if err := Register(context.Background(), js, src, WithInterval(time.Millisecond)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("interval 1ms: %v", err)
	}
}

// TestRegisterOnOldBucket: a bucket made without per-key TTL (an older
// hintstream's) still gets the record, without a TTL.
func TestRegisterOnOldBucket(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: registry.DefaultBucket, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := registry.SupportsTTL(ctx, kv); err != nil || ok {
		t.Fatalf("SupportsTTL = %v, %v on a bucket without LimitMarkerTTL", ok, err)
	}
	rec := schemas.WorkerRecord{WorkerID: 2, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"}}
	if err := registry.PutTTL(ctx, js, kv, rec, time.Second); !errors.Is(err, registry.ErrNoKeyTTL) {
		t.Fatalf("PutTTL on an old bucket: %v", err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Register(rctx, js, func(context.Context) (schemas.WorkerRecord, error) { return rec, nil },
			WithInterval(MinRegisterInterval))
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { _, err := kv.Get(ctx, "2"); return err == nil }, "record stored")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
