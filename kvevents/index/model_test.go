package index

import (
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// refModel is an obviously correct, slow Memory: per worker, a map from
// external hash to sequence hash per tier and the set of sequence hashes
// held on device, with the documented rules spelled out one by one.
type refModel struct {
	max     int64
	workers map[kvevents.WorkerKey]*refWorker
	entries int64
	other   int64
	st      Stats // the counters
}

type refWorker struct {
	tiers       map[schemas.StorageTier]map[uint64]uint64 // "" is device
	held        map[uint64]bool
	droppedFull bool
}

func newRefModel(maxBlocks int64) *refModel {
	return &refModel{max: maxBlocks, workers: map[kvevents.WorkerKey]*refWorker{}}
}

func (m *refModel) worker(k kvevents.WorkerKey) *refWorker {
	w := m.workers[k]
	if w == nil {
		w = &refWorker{tiers: map[schemas.StorageTier]map[uint64]uint64{"": {}}, held: map[uint64]bool{}}
		m.workers[k] = w
	}
	return w
}

func refTier(t schemas.StorageTier) schemas.StorageTier {
	if t == schemas.TierDevice {
		return ""
	}
	return t
}

// apply returns whether the event was dropped for an unknown parent. The
// model knows two tiers only (device and host), so that the order in
// which other tiers are searched for a parent does not matter.
func (m *refModel) apply(ev kvevents.Event) (unknownParent bool) {
	w := m.worker(ev.Worker)
	tier := refTier(ev.Tier)
	device := tier == ""
	mp := w.tiers[tier]
	if mp == nil {
		mp = map[uint64]uint64{}
		w.tiers[tier] = mp
	}
	switch ev.Kind {
	case schemas.KindStored:
		var parent uint64
		chained := false
		if ev.ParentHash != nil {
			p, ok := mp[*ev.ParentHash]
			if !ok {
				p, ok = w.tiers[""][*ev.ParentHash]
			}
			if !ok {
				p, ok = w.tiers[schemas.TierHostPinned][*ev.ParentHash]
			}
			if !ok {
				if w.droppedFull && device {
					m.st.DroppedFull += uint64(len(ev.Blocks))
				} else {
					m.st.UnknownParent++
				}
				return true
			}
			parent, chained = p, true
		}
		for _, b := range ev.Blocks {
			seq := b.LocalHash
			if chained {
				seq = kvevents.NextSequenceHash(parent, b.LocalHash)
			}
			parent, chained = seq, true
			old, ok := mp[b.ExternalHash]
			switch {
			case !device:
				if !ok {
					m.other++
				}
				mp[b.ExternalHash] = seq
			case ok && old == seq:
			case ok:
				// New content under an old external hash replaces the old block.
				delete(w.held, old)
				mp[b.ExternalHash] = seq
				w.held[seq] = true
			case m.max > 0 && m.entries >= m.max:
				m.st.DroppedFull++
				w.droppedFull = true
			default:
				mp[b.ExternalHash] = seq
				m.entries++
				w.held[seq] = true
			}
		}
	case schemas.KindRemoved:
		for _, ext := range ev.Removed {
			seq, ok := mp[ext]
			if !ok {
				m.st.UnknownRemovals++
				continue
			}
			delete(mp, ext)
			if device {
				m.entries--
				delete(w.held, seq)
			} else {
				m.other--
			}
		}
	case schemas.KindCleared:
		m.st.Cleared++
		if device {
			m.entries -= int64(len(mp))
			w.held = map[uint64]bool{}
			w.droppedFull = false
		} else {
			m.other -= int64(len(mp))
		}
		w.tiers[tier] = map[uint64]uint64{}
	}
	return false
}

func (m *refModel) removeWorker(id uint64) {
	for k, w := range m.workers {
		if k.WorkerID != id {
			continue
		}
		for t, mp := range w.tiers {
			if t == "" {
				m.entries -= int64(len(mp))
			} else {
				m.other -= int64(len(mp))
			}
		}
		delete(m.workers, k)
	}
}

func (m *refModel) overlap(seq []uint64) map[kvevents.WorkerKey]int {
	out := map[kvevents.WorkerKey]int{}
	for k, w := range m.workers {
		n := 0
		for n < len(seq) && w.held[seq[n]] {
			n++
		}
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// overlapJump is overlap as Overlap computes it with probe stride jump
// (WithJump), spelled out per page of slots: probes at blocks 0, jump-1,
// 2*jump-1, ... and the last; the blocks since the previous probe are
// checked one by one only when a probe loses a worker still alive.
func (m *refModel) overlapJump(seq []uint64, jump int, slotOf func(kvevents.WorkerKey) int) map[kvevents.WorkerKey]int {
	if jump <= 1 || len(seq) <= 2 {
		return m.overlap(seq)
	}
	probes := []int{0}
	for q := jump - 1; q < len(seq)-1; q += jump {
		probes = append(probes, q)
	}
	probes = append(probes, len(seq)-1)
	pages := map[int][]kvevents.WorkerKey{}
	for k := range m.workers {
		p := slotOf(k) / pageSlots
		pages[p] = append(pages[p], k)
	}
	out := map[kvevents.WorkerKey]int{}
	for _, ks := range pages {
		alive := map[kvevents.WorkerKey]bool{}
		for _, k := range ks {
			if m.workers[k].held[seq[0]] {
				alive[k] = true
			}
		}
		from := 1
		for _, q := range probes[1:] {
			lost := false
			for k := range alive {
				lost = lost || !m.workers[k].held[seq[q]]
			}
			for d := from; lost && d <= q; d++ {
				for k := range alive {
					if !m.workers[k].held[seq[d]] {
						out[k] = d
						delete(alive, k)
					}
				}
			}
			from = q + 1
		}
		for k := range alive {
			out[k] = len(seq)
		}
	}
	return out
}

// stats returns the model's Stats; Hashes counts distinct held hashes
// per page of slots, which needs the index's slot assignment (slotOf).
func (m *refModel) stats(slotOf func(kvevents.WorkerKey) int) Stats {
	s := m.st
	s.Workers = len(m.workers)
	s.Entries, s.DeviceBlocks, s.OtherTierBlocks = m.entries, m.entries, m.other
	perPage := map[int]map[uint64]bool{}
	for k, w := range m.workers {
		p := slotOf(k) / pageSlots
		if perPage[p] == nil {
			perPage[p] = map[uint64]bool{}
		}
		maps.Copy(perPage[p], w.held)
	}
	for _, hs := range perPage {
		s.Hashes += len(hs)
	}
	return s
}

// modelGen makes random events over a small alphabet of block contents,
// so that workers share prefixes, chains continue from held blocks,
// external hashes sometimes collide (re-stores with new content), and
// some parents and removals are unknown.
type modelGen struct {
	r       *rand.Rand
	workers []kvevents.WorkerKey
	ref     *refModel
	ids     map[kvevents.WorkerKey]uint64
}

func (g *modelGen) local() uint64 { return uint64(g.r.IntN(6)) * 0x9e3779b97f4a7c15 }

// ext is the engine hash of a block: a function of its sequence hash (as
// engines hash content), except now and then one from a small pool.
func (g *modelGen) ext(seq uint64, tier schemas.StorageTier) uint64 {
	if g.r.IntN(20) == 0 {
		return uint64(g.r.IntN(4)) // includes 0
	}
	if tier != "" {
		seq ^= 0x5bd1e995
	}
	return mix64(seq)
}

// heldExt returns an external hash k holds on some tier, if any.
func (g *modelGen) heldExt(k kvevents.WorkerKey) (uint64, bool) {
	w := g.ref.workers[k]
	if w == nil {
		return 0, false
	}
	var all []uint64
	for _, mp := range w.tiers {
		for ext := range mp {
			all = append(all, ext)
		}
	}
	if len(all) == 0 {
		return 0, false
	}
	return all[g.r.IntN(len(all))], true
}

func (g *modelGen) event() kvevents.Event {
	k := g.workers[g.r.IntN(len(g.workers))]
	g.ids[k]++
	ev := kvevents.Event{Worker: k, EventID: g.ids[k]}
	if g.r.IntN(4) == 0 {
		ev.Tier = schemas.TierHostPinned
	}
	tier := refTier(ev.Tier)
	switch n := g.r.IntN(100); {
	case n < 60:
		ev.Kind = schemas.KindStored
		var parent uint64
		chained := false
		switch p, ok := g.heldExt(k); {
		case g.r.IntN(30) == 0:
			ev.ParentHash = u64p(mix64(g.r.Uint64())) // unknown
		case ok && g.r.IntN(3) > 0:
			ev.ParentHash = u64p(p)
			parent, chained = g.parentSeq(k, tier, p)
		}
		for range 1 + g.r.IntN(8) {
			l := g.local()
			seq := l
			if chained {
				seq = kvevents.NextSequenceHash(parent, l)
			}
			parent, chained = seq, true
			ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: g.ext(seq, tier), LocalHash: l})
		}
	case n < 90:
		ev.Kind = schemas.KindRemoved
		for range 1 + g.r.IntN(6) {
			if ext, ok := g.heldExt(k); ok && g.r.IntN(5) > 0 {
				ev.Removed = append(ev.Removed, ext)
			} else {
				ev.Removed = append(ev.Removed, mix64(g.r.Uint64()))
			}
		}
	default:
		ev.Kind = schemas.KindCleared
	}
	return ev
}

// parentSeq mirrors the index's parent lookup order (own tier, device,
// host) to chain the generated blocks as the index will.
func (g *modelGen) parentSeq(k kvevents.WorkerKey, tier schemas.StorageTier, ext uint64) (uint64, bool) {
	w := g.ref.workers[k]
	for _, t := range []schemas.StorageTier{tier, "", schemas.TierHostPinned} {
		if seq, ok := w.tiers[t][ext]; ok {
			return seq, true
		}
	}
	return 0, false
}

// prompt returns the sequence hashes of a random prompt over the same
// alphabet, so that it often shares prefixes with what workers hold.
func (g *modelGen) prompt() []uint64 {
	local := make([]uint64, 1+g.r.IntN(12))
	for i := range local {
		local[i] = g.local()
	}
	return kvevents.SequenceHashes(local)
}

func slotOf(ix *Memory) func(kvevents.WorkerKey) int {
	return func(k kvevents.WorkerKey) int {
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		return int(ix.workers[k].slot)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestIndexMatchesModel replays thousands of random events (stores with
// chaining, re-stores, removals, clears on two tiers, worker removals)
// into the Memory and the model, comparing Overlap of random prompts and
// Stats as it goes; with 130 workers (three pages of slots) and with a
// bound on entries; with Overlap probing every block, every third block
// and every DefaultJump-th block (the removals leave holes, which the
// strides credit as the model says).
func TestIndexMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		events    int
		maxBlocks int64
		jump      int
	}{
		{"16 workers", 16, 6000, 0, 1},
		{"130 workers", 130, 6000, 0, 1},
		{"bounded", 12, 4000, 120, 1},
		{"16 workers jump 3", 16, 6000, 0, 3},
		{"130 workers jump 3", 130, 6000, 0, 3},
		{"16 workers default jump", 16, 6000, 0, DefaultJump},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.workers), uint64(tc.maxBlocks)))
			ix := New(WithShards(4), WithMaxBlocks(tc.maxBlocks), WithLogger(discardLogger()), WithJump(tc.jump))
			g := &modelGen{r: r, ref: newRefModel(tc.maxBlocks), ids: map[kvevents.WorkerKey]uint64{}}
			for w := range tc.workers {
				g.workers = append(g.workers, kvevents.WorkerKey{WorkerID: uint64(w / 2), DpRank: uint32(w % 2)})
			}
			deep, queries := 0, 0
			for i := range tc.events {
				if r.IntN(200) == 0 {
					id := g.workers[r.IntN(len(g.workers))].WorkerID
					ix.RemoveWorker(id)
					g.ref.removeWorker(id)
					continue
				}
				ev := g.event()
				dropped := g.ref.apply(ev)
				if err := ix.Apply(ev); (err != nil) != dropped || (err != nil && !errors.Is(err, ErrUnknownParent)) {
					t.Fatalf("event %d %+v: Apply = %v, model dropped %v", i, ev, err, dropped)
				}
				if i%7 == 0 {
					seq := g.prompt()
					got, want := ix.Overlap(seq), g.ref.overlapJump(seq, tc.jump, slotOf(ix))
					if !maps.Equal(got, want) {
						t.Fatalf("after event %d: Overlap = %v, want %v", i, got, want)
					}
					queries++
					for _, n := range want {
						if n >= 2 {
							deep++
							break
						}
					}
				}
				if i%50 == 0 {
					if got, want := ix.Stats(), g.ref.stats(slotOf(ix)); got != want {
						t.Fatalf("after event %d: Stats = %+v, want %+v", i, got, want)
					}
				}
			}
			if deep*10 < queries {
				t.Fatalf("only %d of %d prompts overlap a worker by 2+ blocks", deep, queries)
			}
			st := ix.Stats()
			if st.Entries == 0 || st.OtherTierBlocks == 0 || st.UnknownParent == 0 || st.UnknownRemovals == 0 {
				t.Fatalf("workload too weak: %+v", st)
			}
			if tc.maxBlocks > 0 && (st.DroppedFull == 0 || st.Entries > tc.maxBlocks) {
				t.Fatalf("bound not exercised: %+v", st)
			}
		})
	}
}
