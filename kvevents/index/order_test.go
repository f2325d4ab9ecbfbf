package index

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

func TestEventOrderObserve(t *testing.T) {
	type step struct {
		id    uint64
		want  orderVerdict
		stale bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order with batches", []step{{5, inOrder, false}, {5, inOrder, false}, {6, inOrder, false}, {0, inOrder, false}, {7, inOrder, false}}},
		{"no id never checks", []step{{0, inOrder, false}, {0, inOrder, false}, {3, inOrder, false}}},
		{"duplicate", []step{{1, inOrder, false}, {2, inOrder, false}, {1, outOfOrder, false}, {3, inOrder, false}}},
		{"gap filled late", []step{{1, inOrder, false}, {4, gap, true}, {5, inOrder, true}, {3, outOfOrder, true}, {2, outOfOrder, false}}},
		{"gap filled from the middle", []step{{1, inOrder, false}, {5, gap, true}, {3, outOfOrder, true}, {2, outOfOrder, true}, {4, outOfOrder, false}}},
		{"two gaps", []step{{1, inOrder, false}, {3, gap, true}, {5, gap, true}, {4, outOfOrder, true}, {4, outOfOrder, true}, {2, outOfOrder, false}}},
		{"too many gaps", []step{{1, inOrder, false}, {3, gap, true}, {5, gap, true}, {7, gap, true}, {9, gap, true}, {11, gap, true},
			{2, outOfOrder, true}, {4, outOfOrder, true}, {6, outOfOrder, true}, {8, outOfOrder, true}, {10, outOfOrder, true}}},
		{"too fragmented", []step{{1, inOrder, false}, {3, gap, true}, {5, gap, true}, {7, gap, true}, {20, gap, true},
			{10, outOfOrder, true}, {2, outOfOrder, true}, {4, outOfOrder, true}, {6, outOfOrder, true},
			{8, outOfOrder, true}, {9, outOfOrder, true}, {11, outOfOrder, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o eventOrder
			for i, s := range tc.steps {
				if v, _ := o.observe(s.id); v != s.want || o.stale != s.stale {
					t.Fatalf("step %d (id %d): verdict %d stale %v, want %d %v", i, s.id, v, o.stale, s.want, s.stale)
				}
			}
			o.resync(0)
			if o.stale || o.untracked || len(o.missing) != 0 {
				t.Fatalf("after resync: %+v", o)
			}
		})
	}
	var o eventOrder
	o.observe(10)
	if v, expected := o.observe(13); v != gap || expected != 11 {
		t.Fatalf("gap verdict %d expected %d, want gap expected 11", v, expected)
	}
}

// logBuffer returns a logger writing text records at Debug and up to buf.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func countLines(s, substr string) int {
	n := 0
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

func TestGapMarksStaleUntilClear(t *testing.T) {
	local, seq := randomPrompt(20, 6)
	w, other := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 1, DpRank: 1}
	log, buf := logBuffer()
	ix := New(WithLogger(log))
	mustApply(t, ix, storeRange(w, 1, local, 0, 2, 100))
	mustApply(t, ix, storeRange(w, 2, local, 2, 3, 100))
	mustApply(t, ix, storeRange(other, 7, local, 0, 1, 100)) // its own sequence
	if ix.Stale(w) || len(ix.StaleWorkers()) != 0 {
		t.Fatal("stale before any gap")
	}
	// Ids 3 and 4 never come.
	mustApply(t, ix, storeRange(w, 5, local, 3, 4, 100))
	mustApply(t, ix, storeRange(w, 7, local, 4, 5, 100)) // a second gap while stale
	if !ix.Stale(w) || ix.Stale(other) || !slices.Equal(ix.StaleWorkers(), []kvevents.WorkerKey{w}) {
		t.Fatalf("Stale = %v, StaleWorkers = %v", ix.Stale(w), ix.StaleWorkers())
	}
	if st := ix.Stats(); st.Gaps != 2 || st.StaleWorkers != 1 || st.OutOfOrder != 0 {
		t.Fatalf("Stats = %+v", st)
	}
	logs := buf.String()
	if countLines(logs, "level=WARN") != 1 || !strings.Contains(logs, "worker_id=1 dp_rank=0 expected=3 got=5") {
		t.Fatalf("want one WARN naming worker, dp, expected and got; logs:\n%s", logs)
	}
	// Stale workers still count by default: the router saw the same gap.
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 5, other: 1})
	if id, _ := ix.LastEventID(w); id != 7 {
		t.Fatalf("LastEventID = %d, want 7", id)
	}

	// A host-tier clear says nothing about the device blocks.
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 8, Kind: schemas.KindCleared, Tier: schemas.TierHostPinned})
	if !ix.Stale(w) {
		t.Fatal("host clear resynchronised the device tier")
	}
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 9, Kind: schemas.KindCleared})
	if ix.Stale(w) || ix.Stats().StaleWorkers != 0 || len(ix.StaleWorkers()) != 0 {
		t.Fatal("still stale after a device clear")
	}
	if !strings.Contains(buf.String(), "in sync again") {
		t.Fatalf("no resync log:\n%s", buf.String())
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{other: 1})
}

func TestGapResyncByLateEvents(t *testing.T) {
	local, seq := randomPrompt(21, 6)
	w := kvevents.WorkerKey{WorkerID: 3}
	ix := New(WithLogger(discardLogger()))
	mustApply(t, ix, storeRange(w, 1, local, 0, 2, 100))
	// Events 2 and 3 are delayed. Event 4 chains onto event 3's block and
	// is dropped; so is event 3 when it comes, before event 2.
	for _, ev := range []kvevents.Event{storeRange(w, 4, local, 4, 5, 100), storeRange(w, 3, local, 3, 4, 100)} {
		if err := ix.Apply(ev); !errors.Is(err, ErrUnknownParent) {
			t.Fatalf("Apply(event %d) = %v, want ErrUnknownParent", ev.EventID, err)
		}
		if !ix.Stale(w) {
			t.Fatalf("in sync after event %d with id 2 missing", ev.EventID)
		}
	}
	mustApply(t, ix, storeRange(w, 2, local, 2, 3, 100))
	if ix.Stale(w) {
		t.Fatal("still stale with every missing id seen")
	}
	if st := ix.Stats(); st.Gaps != 1 || st.OutOfOrder != 2 || st.StaleWorkers != 0 || st.UnknownParent != 2 {
		t.Fatalf("Stats = %+v", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3})
}

func TestOutOfOrderIsAppliedIdempotently(t *testing.T) {
	local, seq := randomPrompt(22, 4)
	w := kvevents.WorkerKey{WorkerID: 4}
	ix := New()
	first := storeRange(w, 1, local, 0, 3, 100)
	mustApply(t, ix, first)
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 2, Kind: schemas.KindRemoved, Removed: []uint64{102}})
	mustApply(t, ix, first) // redelivered: re-stores block 2
	if st := ix.Stats(); st.OutOfOrder != 1 || st.Gaps != 0 || st.StaleWorkers != 0 || st.Entries != 3 {
		t.Fatalf("Stats = %+v", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3})
	if id, _ := ix.LastEventID(w); id != 2 {
		t.Fatalf("LastEventID = %d, want 2 (the highest seen)", id)
	}
}

func TestWithExcludeStale(t *testing.T) {
	local, seq := randomPrompt(23, 4)
	a, b := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2}
	ix := New(WithExcludeStale(true), WithLogger(discardLogger()))
	mustApply(t, ix, storeRange(a, 1, local, 0, 4, 100))
	mustApply(t, ix, storeRange(b, 1, local, 0, 2, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{a: 4, b: 2})
	mustApply(t, ix, kvevents.Event{Worker: a, EventID: 3, Kind: schemas.KindRemoved, Removed: []uint64{999}})
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{b: 2})
	mustApply(t, ix, kvevents.Event{Worker: a, EventID: 2, Kind: schemas.KindRemoved, Removed: []uint64{998}})
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{a: 4, b: 2})

	// RemoveWorker of a stale worker leaves no stale count behind, and its
	// slot's next owner starts in sync.
	mustApply(t, ix, kvevents.Event{Worker: a, EventID: 9, Kind: schemas.KindRemoved, Removed: []uint64{997}})
	ix.RemoveWorker(1)
	if st := ix.Stats(); st.StaleWorkers != 0 || len(ix.StaleWorkers()) != 0 {
		t.Fatalf("Stats = %+v after removing the stale worker", st)
	}
	c := kvevents.WorkerKey{WorkerID: 3}
	mustApply(t, ix, storeRange(c, 50, local, 0, 1, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{b: 2, c: 1})
}

func TestWithMaxBlocks(t *testing.T) {
	local, seq := randomPrompt(24, 8)
	w, v := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2}
	ix := New(WithMaxBlocks(5), WithLogger(discardLogger()))
	mustApply(t, ix, storeRange(w, 1, local, 0, 4, 100))
	mustApply(t, ix, storeRange(w, 2, local, 4, 7, 100)) // room for one of three
	if st := ix.Stats(); st.Entries != 5 || st.DroppedFull != 2 || st.UnknownParent != 0 {
		t.Fatalf("Stats = %+v, want 5 entries, 2 dropped", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 5})
	// Re-storing held blocks needs no room; other tiers are not bounded.
	mustApply(t, ix, storeRange(w, 3, local, 0, 2, 100))
	host := storeRange(w, 4, local, 0, 3, 500)
	host.Tier = schemas.TierHostPinned
	mustApply(t, ix, host)
	if st := ix.Stats(); st.Entries != 5 || st.DroppedFull != 2 || st.OtherTierBlocks != 3 {
		t.Fatalf("Stats = %+v", st)
	}
	// A child of a dropped block is dropped too, counted as full.
	if err := ix.Apply(storeRange(w, 5, local, 7, 8, 100)); err == nil {
		t.Fatal("child of a dropped block applied")
	}
	if st := ix.Stats(); st.DroppedFull != 3 || st.UnknownParent != 0 {
		t.Fatalf("Stats = %+v, want the child counted in DroppedFull", st)
	}
	// Another worker gets room once blocks are removed.
	mustApply(t, ix, storeRange(v, 1, local, 0, 2, 100))
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 6, Kind: schemas.KindRemoved, Removed: []uint64{104, 103}})
	mustApply(t, ix, storeRange(v, 2, local, 0, 2, 100))
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{w: 3, v: 2})
	if st := ix.Stats(); st.Entries != 5 || st.DroppedFull != 5 {
		t.Fatalf("Stats = %+v", st)
	}
	// After a device clear, an unknown parent is unknown again.
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 7, Kind: schemas.KindCleared})
	if err := ix.Apply(storeRange(w, 8, local, 7, 8, 100)); err == nil {
		t.Fatal("orphan applied")
	}
	if st := ix.Stats(); st.UnknownParent != 1 || st.Entries != 2 {
		t.Fatalf("Stats = %+v", st)
	}
	wantOverlap(t, ix, seq, map[kvevents.WorkerKey]int{v: 2})
}

// Workers beyond 64 live in further pages of slots; removing workers
// frees slots that new workers reuse without ghosts.
func TestManyWorkersPages(t *testing.T) {
	const n = 200
	local, seq := randomPrompt(25, 12)
	ix := New(WithShards(2))
	want := map[kvevents.WorkerKey]int{}
	for i := range n {
		k := kvevents.WorkerKey{WorkerID: uint64(i / 2), DpRank: uint32(i % 2)}
		depth := 1 + i%len(seq)
		mustApply(t, ix, storeRange(k, 1, local, 0, depth, uint64(i)<<20))
		want[k] = depth
	}
	wantOverlap(t, ix, seq, want)
	if st := ix.Stats(); st.Workers != n || st.Entries != sumValues(want) || st.Hashes != 12+12+12+8 {
		t.Fatalf("Stats = %+v", st)
	}
	// Drop workers across pages 0, 1 and 3, then add new ones.
	for _, id := range []uint64{0, 40, 99} {
		ix.RemoveWorker(id)
		delete(want, kvevents.WorkerKey{WorkerID: id})
		delete(want, kvevents.WorkerKey{WorkerID: id, DpRank: 1})
	}
	wantOverlap(t, ix, seq, want)
	for i := range 7 {
		k := kvevents.WorkerKey{WorkerID: uint64(1000 + i)}
		mustApply(t, ix, storeRange(k, 1, local, 0, 12-i, 0))
		want[k] = 12 - i
	}
	wantOverlap(t, ix, seq, want)
	if st := ix.Stats(); st.Workers != len(want) || st.Entries != sumValues(want) {
		t.Fatalf("Stats = %+v, want %d workers", st, len(want))
	}
	ix.mu.RLock()
	pages := len(ix.pages)
	ix.mu.RUnlock()
	if pages != 4 {
		t.Fatalf("%d pages, want 4 (freed slots reused first)", pages)
	}
	if !maps.Equal(ix.Overlap(seq[:1]), mapValues(want, 1)) {
		t.Fatal("Overlap of the first block")
	}
}

func sumValues(m map[kvevents.WorkerKey]int) int64 {
	var s int64
	for _, v := range m {
		s += int64(v)
	}
	return s
}

func mapValues(m map[kvevents.WorkerKey]int, v int) map[kvevents.WorkerKey]int {
	out := map[kvevents.WorkerKey]int{}
	for k := range m {
		out[k] = v
	}
	return out
}

func TestTooManyWorkers(t *testing.T) {
	ix := New(WithShards(1))
	for i := range maxSlots {
		mustApply(t, ix, kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: uint64(i)}, Kind: schemas.KindCleared})
	}
	k := kvevents.WorkerKey{WorkerID: maxSlots}
	if err := ix.Apply(kvevents.Event{Worker: k, Kind: schemas.KindCleared}); !errors.Is(err, ErrTooManyWorkers) {
		t.Fatalf("Apply = %v, want ErrTooManyWorkers", err)
	}
	ix.RemoveWorker(7)
	mustApply(t, ix, kvevents.Event{Worker: k, Kind: schemas.KindCleared})
}
