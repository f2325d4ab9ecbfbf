package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

const within = 10 * time.Second

func setup(t *testing.T) (context.Context, jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	kv, err := Bucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, kv
}

func rec(id uint64, model string) schemas.WorkerRecord {
	return schemas.WorkerRecord{
		WorkerID: id, Model: model, KvBlockSize: 16,
		// Each worker its own endpoint: two may not share one.
		HintEndpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", 5570+id%50000)},
	}
}

func mustPut(t *testing.T, ctx context.Context, kv jetstream.KeyValue, r schemas.WorkerRecord) {
	t.Helper()
	if err := Put(ctx, kv, r); err != nil {
		t.Fatal(err)
	}
}

func putRaw(t *testing.T, ctx context.Context, kv jetstream.KeyValue, key, value string) {
	t.Helper()
	if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
		t.Fatal(err)
	}
}

// recorder collects OnChange calls.
type recorder struct {
	mu      sync.Mutex
	changes []Change
}

func (c *recorder) add(ch Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, ch)
}

func (c *recorder) forWorker(id uint64) []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Change
	for _, ch := range c.changes {
		if ch.WorkerID == id {
			out = append(out, ch)
		}
	}
	return out
}

func (c *recorder) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.changes)
}

func open(t *testing.T, ctx context.Context, js jetstream.JetStream, opts ...Option) *Registry {
	t.Helper()
	r, err := Open(ctx, js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, r.Run)
	select {
	case <-r.Ready():
	case <-time.After(within):
		t.Fatal("registry not ready")
	}
	return r
}

func ids(ws []schemas.WorkerRecord) []uint64 {
	out := make([]uint64, len(ws))
	for i, w := range ws {
		out[i] = w.WorkerID
	}
	return out
}

func kinds(cs []Change) []ChangeKind {
	out := make([]ChangeKind, len(cs))
	for i, c := range cs {
		out[i] = c.Kind
	}
	return out
}

func TestInitialEntriesVisibleAfterReady(t *testing.T) {
	ctx, js, kv := setup(t)
	for _, id := range []uint64{3, 1, 2} {
		mustPut(t, ctx, kv, rec(id, "Qwen/Qwen3-8B"))
	}
	putRaw(t, ctx, kv, "4", `{"worker_id":4}`) // no kv_block_size, no endpoints
	var rc recorder
	r := open(t, ctx, js, WithOnChange(rc.add))
	if got := ids(r.Workers()); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("Workers() ids = %v", got)
	}
	if w, ok := r.Get(2); !ok || w.Model != "Qwen/Qwen3-8B" || w.KvBlockSize != 16 {
		t.Fatalf("Get(2) = %+v, %v", w, ok)
	}
	if _, ok := r.Get(4); ok {
		t.Fatal("invalid record 4 visible")
	}
	if r.Invalid() != 1 {
		t.Fatalf("Invalid() = %d, want 1", r.Invalid())
	}
	if rc.len() != 3 || kinds(rc.forWorker(1))[0] != Added {
		t.Fatalf("initial changes %+v", rc.changes)
	}
}

func TestLiveChangesInOrder(t *testing.T) {
	ctx, js, kv := setup(t)
	var rc recorder
	r := open(t, ctx, js, WithOnChange(rc.add))
	if len(r.Workers()) != 0 {
		t.Fatal("empty bucket gave workers")
	}

	mustPut(t, ctx, kv, rec(7, "a"))
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(7); return ok }, "worker 7 added")
	mustPut(t, ctx, kv, rec(7, "b"))
	natstest.Eventually(t, within, func() bool { w, _ := r.Get(7); return w.Model == "b" }, "worker 7 updated")
	if err := kv.Delete(ctx, Key(7)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(7); return !ok }, "worker 7 deleted")

	got := rc.forWorker(7)
	if !slices.Equal(kinds(got), []ChangeKind{Added, Updated, Deleted}) {
		t.Fatalf("changes for 7: %v", kinds(got))
	}
	if got[0].Record.Model != "a" || got[0].Previous != nil ||
		got[1].Record.Model != "b" || got[1].Previous.Model != "a" ||
		got[2].Record != nil || got[2].Previous.Model != "b" {
		t.Fatalf("change records wrong: %+v", got)
	}

	// Purge is a delete too, and re-putting an identical record is no change.
	// (Wait for each step: with History 1 a put or purge removes the
	// previous revision, which a lagging watcher then never sees.)
	mustPut(t, ctx, kv, rec(8, "a"))
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(8); return ok }, "worker 8 added")
	same, _ := json.Marshal(rec(8, "a"))
	rev, err := kv.Put(ctx, Key(8), same)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, func() bool {
		r.mu.RLock()
		defer r.mu.RUnlock()
		return r.records[8].rev == rev
	}, "identical re-put of 8 applied")
	if err := kv.Purge(ctx, Key(8)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, func() bool { return len(rc.forWorker(8)) == 2 }, "worker 8 added and purged")
	if k := kinds(rc.forWorker(8)); !slices.Equal(k, []ChangeKind{Added, Deleted}) {
		t.Fatalf("changes for 8: %v", k)
	}
	if _, ok := r.Get(8); ok {
		t.Fatal("purged worker 8 still visible")
	}
}

func TestInvalidEntryCountedAndIgnored(t *testing.T) {
	ctx, js, kv := setup(t)
	var rc recorder
	r := open(t, ctx, js, WithOnChange(rc.add))

	putRaw(t, ctx, kv, "5", `{"worker_id": 5, "model": `)
	natstest.Eventually(t, within, func() bool { return r.Invalid() == 1 }, "invalid JSON counted")
	if _, ok := r.Get(5); ok {
		t.Fatal("invalid entry visible")
	}
	mustPut(t, ctx, kv, rec(5, "ok"))
	natstest.Eventually(t, within, func() bool { w, ok := r.Get(5); return ok && w.Model == "ok" }, "valid put after invalid")

	// A valid record overwritten by an invalid one is gone: Deleted.
	putRaw(t, ctx, kv, "5", `not json`)
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(5); return !ok }, "record replaced by invalid one dropped")
	if r.Invalid() != 2 {
		t.Fatalf("Invalid() = %d, want 2", r.Invalid())
	}
	if k := kinds(rc.forWorker(5)); !slices.Equal(k, []ChangeKind{Added, Deleted}) {
		t.Fatalf("changes for 5: %v", k)
	}
}

func TestKeyMismatchRejected(t *testing.T) {
	ctx, js, kv := setup(t)
	var rc recorder
	r := open(t, ctx, js, WithOnChange(rc.add))

	data, _ := json.Marshal(rec(9, "m"))
	putRaw(t, ctx, kv, "8", string(data))   // worker_id 9 under key 8
	putRaw(t, ctx, kv, "abc", string(data)) // not a number
	putRaw(t, ctx, kv, "009", string(data)) // a second name for 9
	natstest.Eventually(t, within, func() bool { return r.Invalid() == 3 }, "three bad keys counted")
	if _, ok := r.Get(8); ok {
		t.Fatal("mismatched record visible under 8")
	}
	if _, ok := r.Get(9); ok {
		t.Fatal("mismatched record visible under 9")
	}
	if rc.len() != 0 {
		t.Fatalf("changes for rejected entries: %+v", rc.changes)
	}
}

func TestWatcherRecreatedAfterUnexpectedClose(t *testing.T) {
	ctx, js, kv := setup(t)
	mustPut(t, ctx, kv, rec(1, "m"))
	mustPut(t, ctx, kv, rec(2, "m"))
	putRaw(t, ctx, kv, "6", "bad")

	// Hold the watcher goroutine inside OnChange(Added 3) while the bucket
	// changes behind its back, so the re-created watcher must reconcile.
	gate := make(chan struct{})
	held := make(chan struct{})
	var rc recorder
	r := open(t, ctx, js, WithOnChange(func(c Change) {
		rc.add(c)
		if c.WorkerID == 3 && c.Kind == Added {
			close(held)
			<-gate
		}
	}))
	mustPut(t, ctx, kv, rec(3, "m"))
	select {
	case <-held:
	case <-time.After(within):
		t.Fatal("OnChange for worker 3 not called")
	}
	r.wmu.Lock()
	w := r.watcher
	r.wmu.Unlock()
	if err := w.Stop(); err != nil { // the "unexpected" close
		t.Fatal(err)
	}
	// Remove worker 2 without a delete marker, as MaxAge or a purge of
	// old markers would: only a resync can notice.
	st, err := js.Stream(ctx, "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+DefaultBucket+".2")); err != nil {
		t.Fatal(err)
	}
	close(gate)

	natstest.Eventually(t, within, func() bool { _, ok := r.Get(2); return !ok }, "worker 2 dropped on resync")
	mustPut(t, ctx, kv, rec(4, "m"))
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(4); return ok }, "put seen by re-created watcher")

	if got := ids(r.Workers()); !slices.Equal(got, []uint64{1, 3, 4}) {
		t.Fatalf("workers %v", got)
	}
	// The replay repeated 1, 3 and the bad 6 at their old revisions:
	// no new changes, no new invalid count.
	for id, want := range map[uint64][]ChangeKind{1: {Added}, 2: {Added, Deleted}, 3: {Added}, 4: {Added}} {
		if got := kinds(rc.forWorker(id)); !slices.Equal(got, want) {
			t.Errorf("changes for %d: %v, want %v", id, got, want)
		}
	}
	if r.Invalid() != 1 {
		t.Errorf("Invalid() = %d after replay, want 1", r.Invalid())
	}
	if n := r.rewatches.Load(); n != 1 {
		t.Errorf("%d re-watches, want 1", n)
	}
}

// The watcher outlives the context given to Open (nats.go would tie it to
// that context if passed through).
func TestWatcherOutlivesOpenContext(t *testing.T) {
	ctx, js, kv := setup(t)
	openCtx, cancel := context.WithCancel(ctx)
	r := open(t, openCtx, js)
	cancel()
	for id := range uint64(5) {
		mustPut(t, ctx, kv, rec(id, "m"))
		natstest.Eventually(t, within, func() bool { _, ok := r.Get(id); return ok }, "worker %d seen", id)
	}
	if n := r.rewatches.Load(); n != 0 {
		t.Fatalf("watcher re-created %d times after Open's context ended", n)
	}
}

func TestOpenFailsOnCancelledContext(t *testing.T) {
	ctx, js, _ := setup(t)
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Open(dead, js); err == nil {
		t.Fatal("Open with a cancelled context succeeded")
	}
}

func TestRunLeaksNoGoroutine(t *testing.T) {
	ctx, js, kv := setup(t)
	base := runtime.NumGoroutine()
	r, err := Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	stop := natstest.Run(t, r.Run)
	<-r.Ready()
	mustPut(t, ctx, kv, rec(1, "m"))
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(1); return ok }, "put seen")
	stop()
	stop() // idempotent
	if err := r.Run(ctx); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run: %v, want ErrAlreadyRunning", err)
	}
	natstest.Eventually(t, within, func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "registry.(*Registry)") && runtime.NumGoroutine() <= base
	}, "goroutines left after Run returned (base %d)", base)
	if _, ok := r.Get(1); !ok {
		t.Fatal("view cleared by Stop")
	}
}

func TestPutRejectsInvalidRecord(t *testing.T) {
	ctx, _, kv := setup(t)
	bad := rec(3, "m")
	bad.HintEndpoints = []string{"http://x"}
	err := Put(ctx, kv, bad)
	if !errors.Is(err, schemas.ErrMalformed) {
		t.Fatalf("Put(bad) = %v, want ErrMalformed", err)
	}
	if _, err := kv.Get(ctx, Key(3)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("bad record stored: %v", err)
	}
	mustPut(t, ctx, kv, rec(3, "m"))
	e, err := kv.Get(ctx, "3")
	if err != nil {
		t.Fatal(err)
	}
	got, err := schemas.Limits{}.DecodeWorkerRecord(e.Value())
	if err != nil || got.WorkerID != 3 {
		t.Fatalf("stored record %s: %v", e.Value(), err)
	}
}

func TestBucketAttachesWithoutChange(t *testing.T) {
	ctx, js, _ := setup(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "custom", History: 5}); err != nil {
		t.Fatal(err)
	}
	kv, err := Bucket(ctx, js, "custom")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 5 {
		t.Fatalf("existing bucket changed: history %d, %v", st.History(), err)
	}
	def, err := Bucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := def.Status(ctx); err != nil || st.Bucket() != DefaultBucket || st.History() != 1 {
		t.Fatalf("default bucket %v, %v", st, err)
	}
	r := open(t, ctx, js, WithBucket("custom"))
	mustPut(t, ctx, kv, rec(11, "m"))
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(11); return ok }, "custom bucket watched")
}
