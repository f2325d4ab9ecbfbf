package index

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

func u64p(v uint64) *uint64 { return &v }

// storeRange is a stored event of prompt blocks [from, to) for w, whose
// external hash for block i is extBase+i; its parent is block from-1.
func storeRange(w kvevents.WorkerKey, id uint64, local []uint64, from, to int, extBase uint64) kvevents.Event {
	ev := kvevents.Event{Worker: w, EventID: id, Kind: schemas.KindStored}
	if from > 0 {
		ev.ParentHash = u64p(extBase + uint64(from-1))
	}
	for i := from; i < to; i++ {
		ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: extBase + uint64(i), LocalHash: local[i]})
	}
	return ev
}

// randomPrompt returns the local and sequence hashes of a random prompt
// of n blocks of 16 tokens.
func randomPrompt(seed uint64, n int) (local, seq []uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	tokens := make([]uint32, n*16)
	for i := range tokens {
		tokens[i] = r.Uint32N(150000)
	}
	return kvevents.LocalBlockHashes(tokens, 16), kvevents.PromptHashes(tokens, 16)
}

func mustApply(t testing.TB, ix *Memory, ev kvevents.Event) {
	t.Helper()
	if err := ix.Apply(ev); err != nil {
		t.Fatalf("Apply(%+v): %v", ev, err)
	}
}

func wantOverlap(t testing.TB, ix *Memory, seq []uint64, want map[kvevents.WorkerKey]int) {
	t.Helper()
	if got := ix.Overlap(seq); !maps.Equal(got, want) {
		t.Fatalf("Overlap = %v, want %v", got, want)
	}
}

func TestIndexRouterEventVectors(t *testing.T) {
	evs := loadRouterEvents(t)
	prompt := kvevents.PromptHashes(ascending(100), 16)
	w := kvevents.WorkerKey{WorkerID: 7}
	ix := New()
	steps := []map[kvevents.WorkerKey]int{{w: 2}, {w: 3}, {w: 2}, {}}
	for i, ev := range evs {
		mustApply(t, ix, ev)
		if got := ix.Overlap(prompt); !maps.Equal(got, steps[i]) {
			t.Fatalf("after event %d: Overlap = %v, want %v", i+1, got, steps[i])
		}
		if id, ok := ix.LastEventID(w); !ok || id != ev.EventID {
			t.Fatalf("after event %d: LastEventID = %d, %v", i+1, id, ok)
		}
	}
	st := ix.Stats()
	if st.Cleared != 1 || st.DeviceBlocks != 0 || st.Hashes != 0 || st.Workers != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestUnknownParent(t *testing.T) {
	local, seq := randomPrompt(1, 4)
	w := kvevents.WorkerKey{WorkerID: 1}
	ix := New()
	mustApply(t, ix, storeRange(w, 1, local, 0, 2, 100))
	// Parent 102 (block 2) was never stored: the event is dropped whole.
	err := ix.Apply(storeRange(w, 2, local, 3, 4, 100))
	if !errors.Is(err, ErrUnknownParent) {
		t.Fatalf("Apply = %v, want ErrUnknownParent", err)
	}
	if st := ix.Stats(); st.UnknownParent != 1 || st.DeviceBlocks != 2 {
		t.Fatalf("Stats = %+v, want UnknownParent 1, DeviceBlocks 2", st)
	}
	if id, _ := ix.LastEventID(w); id != 2 {
		t.Fatalf("LastEventID = %d, want 2 (dropped events are still seen)", id)
	}
	// A dropped event leaves nothing behind that a later chain could use.
	if err := ix.Apply(storeRange(w, 3, local, 4, 4, 100)); !errors.Is(err, ErrUnknownParent) {
		t.Fatalf("Apply after drop = %v, want ErrUnknownParent", err)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 2})
}

func TestUnknownRemoval(t *testing.T) {
	local, seq := randomPrompt(2, 3)
	w := kvevents.WorkerKey{WorkerID: 1}
	ix := New()
	mustApply(t, ix, storeRange(w, 1, local, 0, 3, 100))
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 2, Kind: schemas.KindRemoved, Removed: []uint64{555, 102, 556}})
	if st := ix.Stats(); st.UnknownRemovals != 2 || st.DeviceBlocks != 2 {
		t.Fatalf("Stats = %+v, want UnknownRemovals 2, DeviceBlocks 2", st)
	}
	// Removing again is unknown too: removal is by what the worker holds.
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 3, Kind: schemas.KindRemoved, Removed: []uint64{102}})
	if st := ix.Stats(); st.UnknownRemovals != 3 {
		t.Fatalf("UnknownRemovals = %d, want 3", st.UnknownRemovals)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 2})
}

func TestNonDeviceTier(t *testing.T) {
	local, seq := randomPrompt(3, 4)
	w := kvevents.WorkerKey{WorkerID: 1}
	ix := New()
	host := storeRange(w, 1, local, 0, 2, 100)
	host.Tier = schemas.TierHostPinned
	mustApply(t, ix, host)
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{})
	if st := ix.Stats(); st.OtherTierBlocks != 2 || st.DeviceBlocks != 0 || st.Hashes != 0 {
		t.Fatalf("Stats = %+v, want 2 other-tier blocks only", st)
	}

	// A device block may chain onto a parent held on another tier; it is
	// still not a leading block without block 0 on device.
	mustApply(t, ix, storeRange(w, 2, local, 2, 3, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{})
	mustApply(t, ix, storeRange(w, 3, local, 0, 2, 200))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3})

	// Cleared on the host tier leaves device blocks alone.
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 4, Kind: schemas.KindCleared, Tier: schemas.TierHostPinned})
	if st := ix.Stats(); st.OtherTierBlocks != 0 || st.DeviceBlocks != 3 {
		t.Fatalf("Stats after host clear = %+v", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3})
}

func TestRemoveWorker(t *testing.T) {
	local, seq := randomPrompt(4, 4)
	a0, a1, b := kvevents.WorkerKey{WorkerID: 1, DpRank: 0}, kvevents.WorkerKey{WorkerID: 1, DpRank: 1}, kvevents.WorkerKey{WorkerID: 2, DpRank: 0}
	ix := New()
	mustApply(t, ix, storeRange(a0, 1, local, 0, 4, 100))
	mustApply(t, ix, storeRange(a1, 1, local, 0, 3, 100))
	mustApply(t, ix, storeRange(b, 1, local, 0, 1, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{a0: 4, a1: 3, b: 1})

	ix.RemoveWorker(1)
	if got := ix.Workers(); !slices.Equal(got, []kvevents.WorkerKey{b}) {
		t.Fatalf("Workers = %v, want [%v]", got, b)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{b: 1})
	if st := ix.Stats(); st.DeviceBlocks != 1 || st.Hashes != 1 || st.Workers != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	if _, ok := ix.LastEventID(a0); ok {
		t.Fatal("LastEventID of a removed worker reported")
	}
	ix.RemoveWorker(99) // unknown: no-op

	// Freed slots are reused without ghosts of the old worker.
	c := kvevents.WorkerKey{WorkerID: 3, DpRank: 0}
	mustApply(t, ix, storeRange(c, 1, local, 0, 2, 100))
	mustApply(t, ix, storeRange(a0, 2, local, 0, 1, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{a0: 1, b: 1, c: 2})
	if got := ix.Workers(); !slices.Equal(got, []kvevents.WorkerKey{a0, b, c}) {
		t.Fatalf("Workers = %v", got)
	}
}

func TestOverlapPerWorkerPrefix(t *testing.T) {
	local, seq := randomPrompt(5, 8)
	otherLocal, _ := randomPrompt(6, 8)
	ix := New()
	want := map[kvevents.WorkerKey]int{}
	for i := range 5 {
		w := kvevents.WorkerKey{WorkerID: uint64(10 + i)}
		n := min(2*i+1, len(seq)) // 1, 3, 5, 7, 8 leading blocks
		mustApply(t, ix, storeRange(w, 1, local, 0, n, 1000))
		want[w] = n
	}
	// A worker that diverges after block 2: block 3 onward is another prompt's.
	div := kvevents.WorkerKey{WorkerID: 20}
	mustApply(t, ix, storeRange(div, 1, local, 0, 3, 0))
	mustApply(t, ix, storeRange(div, 2, otherLocal, 3, 8, 0))
	want[div] = 3
	// A worker holding only another prompt is absent.
	mustApply(t, ix, storeRange(kvevents.WorkerKey{WorkerID: 21}, 1, otherLocal, 0, 8, 0))
	wantOverlap(t, ix, seq, want)
	// A shorter query caps every count at its length.
	wantOverlap(t, ix, seq[:2], map[kvevents.WorkerKey]int{{WorkerID: 10, DpRank: 0}: 1, {WorkerID: 11, DpRank: 0}: 2, {WorkerID: 12, DpRank: 0}: 2, {WorkerID: 13, DpRank: 0}: 2, {WorkerID: 14, DpRank: 0}: 2, div: 2})
	wantOverlap(t, ix, nil, map[kvevents.WorkerKey]int{})
}

// TestOverlapGap: a worker missing a middle block stops there when every
// block is looked up (WithJump(1)), and is credited through the hole when
// the hole lies between two probes that find the worker (the default
// stride, whose probes here are blocks 0 and 3).
func TestOverlapGap(t *testing.T) {
	local, seq := randomPrompt(7, 4)
	w := kvevents.WorkerKey{WorkerID: 1}
	for _, tc := range []struct {
		jump int
		want int
	}{{1, 2}, {DefaultJump, 4}} {
		ix := New(WithJump(tc.jump))
		mustApply(t, ix, storeRange(w, 1, local, 0, 4, 100))
		mustApply(t, ix, kvevents.Event{Worker: w, EventID: 2, Kind: schemas.KindRemoved, Removed: []uint64{102}})
		wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: tc.want}) // holds 0, 1, 3
		if st := ix.Stats(); st.DeviceBlocks != 3 {
			t.Fatalf("DeviceBlocks = %d, want 3", st.DeviceBlocks)
		}
	}
}

func TestRestoreIsIdempotent(t *testing.T) {
	local, seq := randomPrompt(8, 3)
	w := kvevents.WorkerKey{WorkerID: 1}
	ix := New()
	for id := range uint64(3) {
		mustApply(t, ix, storeRange(w, id, local, 0, 3, 100))
	}
	if st := ix.Stats(); st.DeviceBlocks != 3 || st.Hashes != 3 {
		t.Fatalf("Stats = %+v, want 3 blocks", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3})
	mustApply(t, ix, kvevents.Event{Worker: w, Kind: schemas.KindRemoved, Removed: []uint64{100}})
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{})
}

func TestApplyRejectsBadEvents(t *testing.T) {
	ix := New()
	for _, ev := range []kvevents.Event{
		{Kind: 0},
		{Kind: 9},
	} {
		if err := ix.Apply(ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Apply(%+v) = %v, want ErrBadEvent", ev, err)
		}
	}
	if len(ix.Workers()) != 0 {
		t.Fatal("a rejected event registered a worker")
	}
}

func TestWithShards(t *testing.T) {
	local, seq := randomPrompt(9, 16)
	for _, n := range []int{1, 3, 1024} {
		ix := New(WithShards(n), WithLogger(nil))
		if shards := 1 << ix.shardBits; shards < n || shards >= 2*n {
			t.Fatalf("WithShards(%d): %d shards", n, shards)
		}
		mustApply(t, ix, storeRange(kvevents.WorkerKey{WorkerID: 1, DpRank: 0}, 1, local, 0, 16, 0))
		wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{{WorkerID: 1, DpRank: 0}: 16})
	}
}

// Writers churn their own workers' chains while readers query; every
// answer must be a leading count the writer could have produced, and the
// final state must be exact. Run with -race.
func TestConcurrentApplyOverlap(t *testing.T) {
	const writers, rounds, blocks = 4, 200, 32
	local, seq := randomPrompt(10, blocks)
	ix := New(WithShards(4))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+2)
	for r := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for k, n := range ix.Overlap(seq[r:]) {
					if n < 1 || n > blocks-r || k.WorkerID >= writers {
						errs <- errors.New("impossible overlap")
						return
					}
				}
				_ = ix.Stats()
			}
		})
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			k := kvevents.WorkerKey{WorkerID: uint64(w)}
			for i := range rounds {
				n := 1 + (i*7+w)%blocks
				if err := ix.Apply(storeRange(k, uint64(2*i), local, 0, n, 0)); err != nil {
					errs <- err
					return
				}
				if i%10 == 9 {
					ix.RemoveWorker(uint64(w))
				} else if err := ix.Apply(kvevents.Event{Worker: k, EventID: uint64(2*i + 1), Kind: schemas.KindCleared}); err != nil {
					errs <- err
					return
				}
			}
			if err := ix.Apply(storeRange(k, 1<<20, local, 0, w+1, 0)); err != nil {
				errs <- err
			}
		})
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[kvevents.WorkerKey]int{}
	for w := range writers {
		want[kvevents.WorkerKey{WorkerID: uint64(w)}] = w + 1
	}
	wantOverlap(t, ix, seq, want)
	if st := ix.Stats(); st.DeviceBlocks != 1+2+3+4 || st.Hashes != writers {
		t.Fatalf("Stats = %+v", st)
	}
}
