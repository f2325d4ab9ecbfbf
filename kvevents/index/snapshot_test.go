package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

func snapshotBytes(t testing.TB, ix *Memory) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := ix.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// orderedEvent is g.event() with its id now and then perturbed: a gap
// (the pair goes stale), a late id (out of order, perhaps filling a gap),
// or none.
func orderedEvent(g *modelGen) kvevents.Event {
	ev := g.event()
	switch n := g.r.IntN(100); {
	case n < 3:
		g.ids[ev.Worker] += 1 + g.r.Uint64N(3)
		ev.EventID = g.ids[ev.Worker]
	case n < 8:
		ev.EventID = 1 + g.r.Uint64N(g.ids[ev.Worker])
	case n < 10:
		ev.EventID = 0
	}
	return ev
}

// unheldBlocks counts device entries whose block the lookup does not list
// for their pair (see WriteSnapshot).
func unheldBlocks(ix *Memory) int {
	n := 0
	for _, st := range ix.workers {
		st.device.all(func(_, seq uint64) bool {
			if st.page.lookup(seq)&st.bit == 0 {
				n++
			}
			return true
		})
	}
	return n
}

// sameIndex fails unless a and b answer alike: Stats, Workers, stale
// pairs, last event ids, and Overlap of n prompts (checked against the
// model too).
func sameIndex(t *testing.T, when string, a, b *Memory, g *modelGen, n int) {
	t.Helper()
	if sa, sb := a.Stats(), b.Stats(); sa != sb {
		t.Fatalf("%s: Stats\n got %+v\nwant %+v", when, sb, sa)
	}
	if wa, wb := a.Workers(), b.Workers(); !slices.Equal(wa, wb) {
		t.Fatalf("%s: Workers = %v, want %v", when, wb, wa)
	}
	if wa, wb := a.StaleWorkers(), b.StaleWorkers(); !slices.Equal(wa, wb) {
		t.Fatalf("%s: StaleWorkers = %v, want %v", when, wb, wa)
	}
	for _, k := range g.workers {
		ia, oka := a.LastEventID(k)
		ib, okb := b.LastEventID(k)
		if ia != ib || oka != okb {
			t.Fatalf("%s: LastEventID(%v) = %d %v, want %d %v", when, k, ib, okb, ia, oka)
		}
	}
	for range n {
		seq := g.prompt()
		oa, ob, om := a.Overlap(seq), b.Overlap(seq), g.ref.overlapJump(seq, a.jump, slotOf(a))
		if !maps.Equal(oa, ob) || !maps.Equal(oa, om) {
			t.Fatalf("%s: Overlap = %v, want %v (model %v)", when, ob, oa, om)
		}
	}
}

// TestSnapshotRoundTrip builds an index from thousands of random events
// (chains, re-stores, removals, clears on two tiers, worker removals, id
// gaps and late ids), restores its snapshot into a new index, and checks
// that the two answer alike, then stay alike under the same further
// events, which needs parents, removals and order state to survive.
func TestSnapshotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		maxBlocks int64
		opts      []Option
	}{
		{"16 workers", 16, 0, nil},
		{"130 workers", 130, 0, []Option{WithShards(4)}},
		{"bounded", 12, 120, []Option{WithShards(1), WithCapacity(1000)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.workers), 7))
			g := &modelGen{r: r, ref: newRefModel(tc.maxBlocks), ids: map[kvevents.WorkerKey]uint64{}}
			for w := range tc.workers {
				g.workers = append(g.workers, kvevents.WorkerKey{WorkerID: uint64(w / 2), DpRank: uint32(w % 2)})
			}
			opts := append([]Option{WithMaxBlocks(tc.maxBlocks), WithLogger(discardLogger())}, tc.opts...)
			ix := New(opts...)
			step := func(ixs ...*Memory) {
				if r.IntN(200) == 0 {
					id := g.workers[r.IntN(len(g.workers))].WorkerID
					for _, x := range ixs {
						x.RemoveWorker(id)
					}
					g.ref.removeWorker(id)
					return
				}
				ev := orderedEvent(g)
				dropped := g.ref.apply(ev)
				for _, x := range ixs {
					if err := x.Apply(ev); (err != nil) != dropped {
						t.Fatalf("%+v: Apply = %v, model dropped %v", ev, err, dropped)
					}
				}
			}
			for range 5000 {
				step(ix)
			}
			st := ix.Stats()
			if st.Entries == 0 || st.OtherTierBlocks == 0 || st.StaleWorkers == 0 || st.Gaps == 0 || st.OutOfOrder == 0 {
				t.Fatalf("workload too weak: %+v", st)
			}
			if tc.maxBlocks > 0 && st.DroppedFull == 0 {
				t.Fatalf("bound not exercised: %+v", st)
			}
			t.Logf("%+v, %d unheld device entries", st, unheldBlocks(ix))

			ix2 := New(opts...)
			if err := ix2.ReadSnapshot(bytes.NewReader(snapshotBytes(t, ix))); err != nil {
				t.Fatal(err)
			}
			sameIndex(t, "restored", ix, ix2, g, 500)
			for i := range 3000 {
				step(ix, ix2)
				if i%100 == 0 {
					sameIndex(t, "after further events", ix, ix2, g, 5)
				}
			}
			sameIndex(t, "at the end", ix, ix2, g, 300)
		})
	}
}

// TestSnapshotUnheldBlock restores a device entry that the lookup does
// not list: two external hashes of one content, one removed.
func TestSnapshotUnheldBlock(t *testing.T) {
	ix := New(WithLogger(discardLogger()))
	k := kvevents.WorkerKey{WorkerID: 1}
	for _, ev := range []kvevents.Event{
		{Worker: k, EventID: 1, Kind: schemas.KindStored, Blocks: []kvevents.Block{{ExternalHash: 10, LocalHash: 5}}},
		{Worker: k, EventID: 2, Kind: schemas.KindStored, Blocks: []kvevents.Block{{ExternalHash: 11, LocalHash: 5}}},
		{Worker: k, EventID: 3, Kind: schemas.KindRemoved, Removed: []uint64{10}},
	} {
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	seq := kvevents.SequenceHashes([]uint64{5})
	if len(ix.Overlap(seq)) != 0 || unheldBlocks(ix) != 1 {
		t.Fatalf("setup: Overlap %v, unheld %d", ix.Overlap(seq), unheldBlocks(ix))
	}
	ix2 := New()
	if err := ix2.ReadSnapshot(bytes.NewReader(snapshotBytes(t, ix))); err != nil {
		t.Fatal(err)
	}
	if got := ix2.Overlap(seq); len(got) != 0 {
		t.Fatalf("restored Overlap = %v, want none", got)
	}
	// The entry still chains a child and is still removable.
	for _, x := range []*Memory{ix, ix2} {
		if err := x.Apply(kvevents.Event{Worker: k, EventID: 4, Kind: schemas.KindStored, ParentHash: u64p(11),
			Blocks: []kvevents.Block{{ExternalHash: 12, LocalHash: 6}}}); err != nil {
			t.Fatal(err)
		}
		if err := x.Apply(kvevents.Event{Worker: k, EventID: 5, Kind: schemas.KindRemoved, Removed: []uint64{11}}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := ix.Stats(), ix2.Stats(); a != b || a.Entries != 1 || a.UnknownRemovals != 0 {
		t.Fatalf("Stats %+v, want %+v with 1 entry", b, a)
	}
}

// TestSnapshotStale restores a pair waiting for two missing ids and one
// whose gaps are too many to track: both stay stale, the first is in
// sync once its ids arrive, the second only after a clear.
func TestSnapshotStale(t *testing.T) {
	ix := New(WithLogger(discardLogger()))
	a, b := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2, DpRank: 3}
	store := func(x *Memory, k kvevents.WorkerKey, id uint64) {
		t.Helper()
		if err := x.Apply(kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindStored,
			Blocks: []kvevents.Block{{ExternalHash: id + 100*k.WorkerID, LocalHash: k.WorkerID}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []uint64{1, 2, 5} {
		store(ix, a, id)
	}
	for _, id := range []uint64{1, 3, 5, 7, 9, 11} {
		store(ix, b, id)
	}
	ix2 := New(WithLogger(discardLogger()), WithExcludeStale(true))
	if err := ix2.ReadSnapshot(bytes.NewReader(snapshotBytes(t, ix))); err != nil {
		t.Fatal(err)
	}
	if got := ix2.StaleWorkers(); !slices.Equal(got, []kvevents.WorkerKey{a, b}) || ix2.Stats().StaleWorkers != 2 {
		t.Fatalf("restored StaleWorkers = %v (%+v)", got, ix2.Stats())
	}
	if id, ok := ix2.LastEventID(b); id != 11 || !ok {
		t.Fatalf("LastEventID = %d %v", id, ok)
	}
	if got := ix2.Overlap(kvevents.SequenceHashes([]uint64{1})); len(got) != 0 {
		t.Fatalf("stale pair in Overlap with WithExcludeStale: %v", got)
	}
	for _, x := range []*Memory{ix, ix2} {
		store(x, a, 3)
		store(x, a, 4)
		store(x, b, 2)
		if got := x.StaleWorkers(); !slices.Equal(got, []kvevents.WorkerKey{b}) {
			t.Fatalf("after late ids: StaleWorkers = %v, want [%v]", got, b)
		}
	}
	if got := ix2.Overlap(kvevents.SequenceHashes([]uint64{1})); !maps.Equal(got, map[kvevents.WorkerKey]int{a: 1}) {
		t.Fatalf("Overlap = %v, want %v:1", got, a)
	}
}

// snapBuilder writes snapshots by hand, with a valid checksum.
type snapBuilder struct{ b []byte }

func newSnapBuilder() *snapBuilder {
	return &snapBuilder{b: binary.LittleEndian.AppendUint16([]byte(snapMagic), snapVersion)}
}
func (s *snapBuilder) u8(v byte) *snapBuilder { s.b = append(s.b, v); return s }
func (s *snapBuilder) u16(v uint16) *snapBuilder {
	s.b = binary.LittleEndian.AppendUint16(s.b, v)
	return s
}
func (s *snapBuilder) u32(v uint32) *snapBuilder {
	s.b = binary.LittleEndian.AppendUint32(s.b, v)
	return s
}
func (s *snapBuilder) u64(vs ...uint64) *snapBuilder {
	for _, v := range vs {
		s.b = binary.LittleEndian.AppendUint64(s.b, v)
	}
	return s
}

// worker starts a record: in sync, last id 1, then device with count
// pairs (none unheld) that the caller appends.
func (s *snapBuilder) worker(id uint64, sl uint16, count uint64) *snapBuilder {
	return s.u8(snapTagWorker).u64(id).u32(0).u16(sl).u8(snapSeen).u64(1).u8(0).u8(1).u8(0).u64(count, 0)
}
func (s *snapBuilder) end() []byte {
	s.u8(snapTagEnd).u64(0, 0, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint32(s.b, crc32.Checksum(s.b, castagnoli))
}

func wantBad(t *testing.T, what string, data []byte) {
	t.Helper()
	ix := New()
	if err := ix.ReadSnapshot(bytes.NewReader(data)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("%s: ReadSnapshot = %v, want ErrBadSnapshot", what, err)
	}
	if s := ix.Stats(); s != (Stats{}) {
		t.Fatalf("%s: index changed: %+v", what, s)
	}
}

func smallSnapshot(t testing.TB) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	g := &modelGen{r: r, ref: newRefModel(0), ids: map[kvevents.WorkerKey]uint64{}}
	for w := range 4 {
		g.workers = append(g.workers, kvevents.WorkerKey{WorkerID: uint64(w)})
	}
	ix := New(WithLogger(discardLogger()))
	for range 150 {
		ev := orderedEvent(g)
		g.ref.apply(ev)
		_ = ix.Apply(ev)
	}
	return snapshotBytes(t, ix)
}

// TestSnapshotCorrupt feeds damaged snapshots: truncated at every
// offset, every byte flipped, wrong magic or version, trailing bytes,
// and well-checksummed ones with inconsistent contents.
func TestSnapshotCorrupt(t *testing.T) {
	good := smallSnapshot(t)
	if err := New().ReadSnapshot(bytes.NewReader(good)); err != nil {
		t.Fatalf("good snapshot: %v", err)
	}
	t.Logf("%d bytes", len(good))
	for n := range len(good) {
		wantBad(t, "truncated", good[:n])
	}
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 1 << (i % 8)
		wantBad(t, "flipped", bad)
	}
	wantBad(t, "trailing byte", append(slices.Clone(good), 0))
	bad := slices.Clone(good)
	copy(bad, "HSIY")
	wantBad(t, "magic", bad)
	wantBad(t, "magic only", newSnapBuilder().end()[:4:4])
	v2 := newSnapBuilder()
	v2.b[4] = 2
	wantBad(t, "version 2", v2.end())

	for name, data := range map[string][]byte{
		"duplicate ext":      newSnapBuilder().worker(1, 0, 2).u64(5, 6, 5, 7).end(),
		"duplicate ext 0":    newSnapBuilder().worker(1, 0, 2).u64(0, 6, 0, 7).end(),
		"duplicate worker":   newSnapBuilder().worker(1, 0, 0).worker(1, 1, 0).end(),
		"slots out of order": newSnapBuilder().worker(1, 5, 0).worker(2, 5, 0).end(),
		"unheld > count": newSnapBuilder().u8(snapTagWorker).u64(1).u32(0).u16(0).u8(snapSeen).u64(1).u8(0).
			u8(1).u8(0).u64(0, 1).end(),
		"unknown tag": newSnapBuilder().u8('X').end(),
		"stale without ranges": newSnapBuilder().u8(snapTagWorker).u64(1).u32(0).u16(0).u8(snapSeen|snapStale).
			u64(9).u8(0).u8(1).u8(0).u64(0, 0).end(),
	} {
		wantBad(t, name, data)
	}
	tier := newSnapBuilder().u8(snapTagWorker).u64(1).u32(0).u16(0).u8(snapSeen).u64(1).u8(0).u8(2).u8(0).u64(0, 0)
	tier.b = append(append(tier.b, 6), "device"...)
	wantBad(t, "device as other tier", tier.u64(1, 0, 1, 2).end())
}

// TestSnapshotAllocationBounded gives counts that the input does not
// back with bytes: ReadSnapshot must fail without allocating for them.
func TestSnapshotAllocationBounded(t *testing.T) {
	huge := newSnapBuilder().worker(1, 0, 1<<50).u64(1, 2).b
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	wantBad(t, "huge count", huge)
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte input", d, len(huge))
	}
}

// TestSnapshotFailureKeepsIndex checks that a failed ReadSnapshot leaves
// a filled index as it was, and a good one replaces it whole.
func TestSnapshotFailureKeepsIndex(t *testing.T) {
	ix := New()
	k := kvevents.WorkerKey{WorkerID: 9}
	if err := ix.Apply(kvevents.Event{Worker: k, EventID: 1, Kind: schemas.KindStored, Blocks: []kvevents.Block{{ExternalHash: 1, LocalHash: 2}}}); err != nil {
		t.Fatal(err)
	}
	before := ix.Stats()
	good := smallSnapshot(t)
	if err := ix.ReadSnapshot(bytes.NewReader(good[:len(good)-1])); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("ReadSnapshot = %v", err)
	}
	if ix.Stats() != before {
		t.Fatalf("Stats %+v, want %+v", ix.Stats(), before)
	}
	if err := ix.ReadSnapshot(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	fresh := New()
	if err := fresh.ReadSnapshot(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if _, ok := ix.LastEventID(k); ok || ix.Stats() != fresh.Stats() {
		t.Fatalf("replaced index: %+v, want %+v", ix.Stats(), fresh.Stats())
	}
	// The old pair's state is gone but the pair may come back.
	if err := ix.Apply(kvevents.Event{Worker: k, EventID: 1, Kind: schemas.KindStored, Blocks: []kvevents.Block{{ExternalHash: 1, LocalHash: 2}}}); err != nil {
		t.Fatal(err)
	}
	if got := ix.Overlap([]uint64{2}); got[k] != 1 {
		t.Fatalf("Overlap = %v", got)
	}
}

// TestSnapshotConcurrentApply snapshots while 8 pairs store chains, 4
// blocks per event id: each restored pair must hold exactly 4 blocks per
// event id it reports, i.e. be copied at one moment.
func TestSnapshotConcurrentApply(t *testing.T) {
	const workers, events, per = 8, 400, 4
	ix := New()
	cws := make([]*chainWorker, workers)
	for w := range cws {
		cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w) + 1, chainLen: 1 << 20}
	}
	var wg sync.WaitGroup
	for _, c := range cws {
		wg.Go(func() {
			for id := range uint64(events) {
				ev := c.stored(per)
				ev.EventID = id + 1
				if err := ix.Apply(*ev); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var snaps [][]byte
	for len(snaps) < 5 {
		var buf bytes.Buffer
		if err := ix.WriteSnapshot(&buf); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, buf.Bytes())
	}
	wg.Wait()
	snaps = append(snaps, snapshotBytes(t, ix))
	prompts := make([][]uint64, workers)
	for w, c := range cws {
		local := make([]uint64, events*per)
		for n := range local {
			local[n] = c.local(uint64(n))
		}
		prompts[w] = kvevents.SequenceHashes(local)
	}
	for i, snap := range snaps {
		x := New()
		if err := x.ReadSnapshot(bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
		for w, c := range cws {
			id, _ := x.LastEventID(c.key)
			if got := x.Overlap(prompts[w])[c.key]; got != int(id)*per {
				t.Fatalf("snapshot %d: %v holds %d blocks at event %d, want %d", i, c.key, got, id, int(id)*per)
			}
		}
	}
	if got := New(); got.ReadSnapshot(bytes.NewReader(snaps[len(snaps)-1])) != nil || got.Stats().Entries != workers*events*per {
		t.Fatalf("final snapshot: %+v", got.Stats())
	}
}

// FuzzReadSnapshot: any input either loads or fails with ErrBadSnapshot,
// never panics; one that loads writes a snapshot that loads alike.
func FuzzReadSnapshot(f *testing.F) {
	f.Add(smallSnapshot(f))
	f.Add(newSnapBuilder().worker(1, 3, 1).u64(5, 6).end())
	f.Add(newSnapBuilder().end())
	f.Fuzz(func(t *testing.T, data []byte) {
		ix := New()
		if err := ix.ReadSnapshot(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("ReadSnapshot = %v, want ErrBadSnapshot", err)
			}
			return
		}
		again := New()
		if err := again.ReadSnapshot(bytes.NewReader(snapshotBytes(t, ix))); err != nil {
			t.Fatal(err)
		}
		if a, b := ix.Stats(), again.Stats(); a != b {
			t.Fatalf("Stats %+v, then %+v", a, b)
		}
	})
}

// buildSnapIndex fills an index with entries device blocks over 64
// pairs, 32-block chained events as in BenchmarkApplyStored.
func buildSnapIndex(b *testing.B, entries int) *Memory {
	perWorker := uint64(entries / benchWorkers)
	ix := New()
	for w := range benchWorkers {
		c := &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: benchChainLen}
		for c.next < perWorker {
			applyB(b, ix, c.stored(benchEvent))
		}
	}
	return ix
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkSnapshot writes and reads the snapshot of a 1M-entry index of
// 64 pairs; write goes to a counting io.Writer, read from memory into a
// new index.
func BenchmarkSnapshot(b *testing.B) {
	ix := buildSnapIndex(b, 1<<20)
	entries := float64(ix.Stats().Entries)
	var buf bytes.Buffer
	if err := ix.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.Run("write", func(b *testing.B) {
		var w countWriter
		for b.Loop() {
			if err := ix.WriteSnapshot(&w); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		b.ReportMetric(float64(len(data))/entries, "bytes/entry")
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if err := New().ReadSnapshot(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}

// BenchmarkSnapshot10M builds a 10M-entry index of 64 pairs (not timed),
// then writes its snapshot to memory and reads it into a new index,
// reporting each step's seconds and the snapshot's bytes per entry. Run
// it with -benchtime 1x.
func BenchmarkSnapshot10M(b *testing.B) {
	b.StopTimer()
	ix := buildSnapIndex(b, 10_000_000)
	st := ix.Stats()
	entries := float64(st.Entries)
	var buf bytes.Buffer
	var wsec, rsec float64
	b.StartTimer()
	for b.Loop() {
		buf.Reset()
		t0 := time.Now()
		if err := ix.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		x := New()
		if err := x.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		rsec, wsec = time.Since(t1).Seconds(), t1.Sub(t0).Seconds()
		if x.Stats() != st {
			b.Fatalf("restored %+v, want %+v", x.Stats(), st)
		}
	}
	b.ReportMetric(wsec, "write-s")
	b.ReportMetric(rsec, "read-s")
	b.ReportMetric(entries/wsec, "write-entries/s")
	b.ReportMetric(entries/rsec, "read-entries/s")
	b.ReportMetric(float64(buf.Len())/entries, "bytes/entry")
}

// TestSnapshotDroppedFull restores a pair that had blocks dropped by
// WithMaxBlocks: a child of a dropped block still counts as DroppedFull,
// not UnknownParent.
func TestSnapshotDroppedFull(t *testing.T) {
	opts := []Option{WithMaxBlocks(2), WithLogger(discardLogger())}
	ix := New(opts...)
	k := kvevents.WorkerKey{WorkerID: 4}
	if err := ix.Apply(kvevents.Event{Worker: k, EventID: 1, Kind: schemas.KindStored,
		Blocks: []kvevents.Block{{ExternalHash: 1, LocalHash: 1}, {ExternalHash: 2, LocalHash: 2}, {ExternalHash: 3, LocalHash: 3}}}); err != nil {
		t.Fatal(err)
	}
	ix2 := New(opts...)
	if err := ix2.ReadSnapshot(bytes.NewReader(snapshotBytes(t, ix))); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Memory{ix, ix2} {
		err := x.Apply(kvevents.Event{Worker: k, EventID: 2, Kind: schemas.KindStored, ParentHash: u64p(3),
			Blocks: []kvevents.Block{{ExternalHash: 4, LocalHash: 4}}})
		if st := x.Stats(); !errors.Is(err, ErrUnknownParent) || st.DroppedFull != 2 || st.UnknownParent != 0 {
			t.Fatalf("Apply = %v, Stats %+v, want DroppedFull 2", err, st)
		}
	}
}
