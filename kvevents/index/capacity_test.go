package index

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
)

// TestWithCapacityNoGrowth fills an index sized WithCapacity to its
// capacity and checks that no table was reallocated on the way, that the
// index answers as one without the hint, and that removals do not
// shrink the tables below the hint.
func TestWithCapacityNoGrowth(t *testing.T) {
	const workers, perWorker = pageSlots, 512
	ix := New(WithCapacity(workers*perWorker), WithShards(4))
	plain := New(WithShards(4))
	cws := make([]*chainWorker, workers)
	for w := range cws {
		cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: 256}
	}
	// One event per worker allocates every table at its floor.
	for _, c := range cws {
		ev := c.stored(32)
		mustApply(t, ix, *ev)
		mustApply(t, plain, *ev)
	}
	pg := ix.pages[0]
	arrays := make([]*bitSlots, len(pg.tabs))
	for i := range pg.tabs {
		if arrays[i] = pg.tabs[i].cur.Load(); arrays[i] == nil {
			t.Fatalf("shard %d not allocated after %d blocks", i, workers*32)
		}
	}
	exts := make([]*extEntry, workers)
	for w, c := range cws {
		exts[w] = &ix.workers[c.key].device.slots[0]
	}
	for _, c := range cws {
		for c.next < perWorker {
			ev := c.stored(32)
			mustApply(t, ix, *ev)
			mustApply(t, plain, *ev)
		}
	}
	for i := range pg.tabs {
		if pg.tabs[i].cur.Load() != arrays[i] {
			t.Fatalf("shard %d was reallocated while filling to capacity (%d -> %d slots)", i, arrays[i].n, pg.tabs[i].cur.Load().n)
		}
	}
	for w, c := range cws {
		if &ix.workers[c.key].device.slots[0] != exts[w] {
			t.Fatalf("worker %d's device table was reallocated while filling to capacity", w)
		}
	}
	if got, want := ix.Stats(), plain.Stats(); got != want {
		t.Fatalf("Stats = %+v, without the hint %+v", got, want)
	}
	for _, c := range cws {
		seq := kvevents.SequenceHashes(func() []uint64 {
			l := make([]uint64, 256)
			for i := range l {
				l[i] = c.local(uint64(i))
			}
			return l
		}())
		wantOverlap(t, ix, seq, plain.Overlap(seq))
	}
	// Remove all but the first event of each worker: the tables keep their size.
	for _, c := range cws {
		for from := uint64(32); from < c.next; from += 32 {
			mustApply(t, ix, *c.removed(from, 32))
		}
	}
	floor := slotsFor(workers * perWorker / pageSlots)
	for w, c := range cws {
		if n := ix.workers[c.key].device.n(); n != floor {
			t.Fatalf("worker %d's device table has %d slots after removals, want the floor %d", w, n, floor)
		}
	}
	for i := range pg.tabs {
		if n := pg.tabs[i].cur.Load().n; n < pg.tabs[i].floor {
			t.Fatalf("shard %d shrank to %d slots, under the floor %d", i, n, pg.tabs[i].floor)
		}
	}
	if st := ix.Stats(); st.Entries != workers*32 {
		t.Fatalf("Entries = %d, want %d", st.Entries, workers*32)
	}
}
