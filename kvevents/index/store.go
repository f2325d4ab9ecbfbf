package index

import (
	"fmt"
	"slices"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// allTiers is an internal pseudo-tier for clearLocked.
const allTiers schemas.StorageTier = "\x00all"

// clearChunk is the number of blocks a clear collects before unindexing
// them (a prefetched chunk, one writer-lock hold, at a time).
const clearChunk = 1024

// table returns the worker's table for tier, creating it if create.
func (st *workerState) table(tier schemas.StorageTier, create bool) *extTable {
	if tier == "" || tier == schemas.TierDevice {
		return &st.device
	}
	m := st.other[tier]
	if m == nil && create {
		if st.other == nil {
			st.other = make(map[schemas.StorageTier]*extTable)
		}
		m = &extTable{}
		st.other[tier] = m
	}
	return m
}

// parentSeq finds the sequence hash of an external hash, in the event's
// own tier first: a block offloaded to another tier keeps its content, so
// a parent known on any tier of this worker chains correctly.
func (st *workerState) parentSeq(own *extTable, ext uint64) (uint64, bool) {
	if seq, ok := own.get(ext); ok {
		return seq, true
	}
	if seq, ok := st.device.get(ext); ok {
		return seq, true
	}
	for _, m := range st.other {
		if seq, ok := m.get(ext); ok {
			return seq, true
		}
	}
	return 0, false
}

func (ix *Memory) storeLocked(st *workerState, ev *kvevents.Event) error {
	m := st.table(ev.Tier, true)
	var parent uint64
	chained := false
	if ev.ParentHash != nil {
		p, ok := st.parentSeq(m, *ev.ParentHash)
		if !ok {
			reason := "parent unknown"
			if st.droppedFull && onDevice(ev) {
				reason = "parent dropped, index full"
				ix.droppedFull.Add(uint64(len(ev.Blocks)))
			} else {
				ix.unknownParent.Add(1)
			}
			ix.log.Debug("kvevents: stored event dropped, "+reason,
				"worker_id", st.key.WorkerID, "dp_rank", st.key.DpRank,
				"event_id", ev.EventID, "parent_hash", *ev.ParentHash)
			return fmt.Errorf("%w: worker %d dp %d event %d parent %d (%s)",
				ErrUnknownParent, st.key.WorkerID, st.key.DpRank, ev.EventID, *ev.ParentHash, reason)
		}
		parent, chained = p, true
	}
	seqs := st.seqs[:0]
	for _, b := range ev.Blocks {
		if chained {
			parent = kvevents.NextSequenceHash(parent, b.LocalHash)
		} else {
			parent, chained = b.LocalHash, true
		}
		seqs = append(seqs, parent)
	}
	st.seqs = seqs
	m.reserve(len(ev.Blocks))
	if !onDevice(ev) {
		var added int64
		for i, b := range ev.Blocks {
			if st.lowerPut(ev.Tier, m, b.ExternalHash, seqs[i]) {
				added++
			}
		}
		ix.otherBlocks.Add(added)
		return nil
	}
	ix.storeDevice(st, ev.Blocks, seqs)
	return nil
}

// storeDevice indexes blocks, whose sequence hashes are seqs, for st,
// in chunks whose table slots are prefetched before the writer lock.
func (ix *Memory) storeDevice(st *workerState, blocks []kvevents.Block, seqs []uint64) {
	for len(blocks) > 0 {
		k := min(len(blocks), prefetchKeys/2)
		ix.storeChunk(st, blocks[:k], seqs[:k])
		blocks, seqs = blocks[k:], seqs[k:]
	}
}

func (ix *Memory) storeChunk(st *workerState, blocks []kvevents.Block, seqs []uint64) {
	m, pg, bit := &st.device, st.page, st.bit
	// Every probe's start is computed, and its lines loaded, before any
	// probe: the loads are independent, so their misses overlap. m has
	// room reserved (storeLocked), so m's slots stay put; a lookup shard
	// may be rebuilt by an earlier block of the chunk, which setFrom
	// detects.
	var (
		buf   [2 * prefetchKeys]*uint64
		tabs  [prefetchKeys / 2]*bitTable
		arrs  [prefetchKeys / 2]*bitSlots
		homes [prefetchKeys / 2]int
		ehome [prefetchKeys / 2]int
	)
	ptrs := buf[:0]
	en := m.n()
	blocks, seqs = blocks[:len(blocks)], seqs[:len(blocks)]
	for i := range blocks {
		ei := homeSlot(spread(blocks[i].ExternalHash), en)
		ehome[i] = ei
		ptrs = append(ptrs, &m.slots[ei].key, &m.slots[min(ei+lookahead, en)].key)
		t, h := pg.table(seqs[i])
		tabs[i] = t
		if d := t.cur.Load(); d != nil {
			bi := homeSlot(h, d.n)
			arrs[i], homes[i] = d, bi
			ptrs = append(ptrs, &d.s[bi].key, &d.s[min(bi+lookahead, d.n)].key)
		}
	}
	loadAll(ptrs)

	ix.wmu.Lock()
	room := int64(len(blocks))
	if ix.maxBlocks > 0 {
		room = min(room, ix.maxBlocks-ix.entries.Load())
	}
	var added, dropped, hashes int64
	for i, b := range blocks {
		seq := seqs[i]
		j, ok := m.findFrom(b.ExternalHash, ehome[i])
		switch {
		case ok && m.slots[j].val == seq:
			continue
		case ok:
			// A re-stored external hash with new content no longer holds
			// the old block, as Dynamo's lookup overwrite implies.
			if pg.clear(m.slots[j].val, bit) {
				hashes--
			}
			m.slots[j].val = seq
		case added >= room:
			dropped++
			continue
		default:
			m.insertAt(j, b.ExternalHash, seq)
			added++
		}
		if tabs[i].setFrom(seq, bit, arrs[i], homes[i], pg.shardBits) {
			hashes++
		}
	}
	ix.entries.Add(added)
	ix.hashes.Add(hashes)
	ix.wmu.Unlock()
	if dropped > 0 {
		st.droppedFull = true
		ix.droppedFull.Add(uint64(dropped))
	}
}

func (ix *Memory) removeLocked(st *workerState, ev *kvevents.Event) {
	m := st.table(ev.Tier, false)
	if m == nil {
		ix.unknownRemovals.Add(uint64(len(ev.Removed)))
		return
	}
	seqs := st.seqs[:0]
	var buf [2 * prefetchKeys]*uint64
	for chunk := range slices.Chunk(ev.Removed, prefetchKeys) {
		ptrs := buf[:0]
		for _, ext := range chunk {
			ptrs = m.addrs(ext, ptrs)
		}
		loadAll(ptrs)
		for _, ext := range chunk {
			if seq, ok := m.remove(ext); ok {
				seqs = append(seqs, seq)
			} else {
				ix.unknownRemovals.Add(1)
			}
		}
	}
	m.shrink()
	st.seqs = seqs
	if !onDevice(ev) {
		for _, seq := range seqs {
			st.lowerRemoved(ev.Tier, seq)
		}
		ix.otherBlocks.Add(-int64(len(seqs)))
		return
	}
	ix.unindex(st, seqs)
}

// unindex clears st's bit from seqs, which st's device table no longer
// lists, prefetching and holding the writer lock a chunk at a time.
func (ix *Memory) unindex(st *workerState, seqs []uint64) {
	pg, bit := st.page, st.bit
	var buf [2 * prefetchKeys]*uint64
	for chunk := range slices.Chunk(seqs, prefetchKeys) {
		ptrs := buf[:0]
		for _, seq := range chunk {
			ptrs = pg.addrs(seq, ptrs)
		}
		loadAll(ptrs)
		var hashes int64
		ix.wmu.Lock()
		for _, seq := range chunk {
			if pg.clear(seq, bit) {
				hashes--
			}
		}
		ix.entries.Add(-int64(len(chunk)))
		ix.hashes.Add(hashes)
		ix.wmu.Unlock()
	}
}

// clearLocked drops the worker's blocks on tier, or on every tier if
// tier is allTiers.
func (ix *Memory) clearLocked(st *workerState, tier schemas.StorageTier) {
	if tier == "" || tier == schemas.TierDevice || tier == allTiers {
		seqs := st.seqs[:0]
		st.device.all(func(_, seq uint64) bool {
			if seqs = append(seqs, seq); len(seqs) == clearChunk {
				ix.unindex(st, seqs)
				seqs = seqs[:0]
			}
			return true
		})
		ix.unindex(st, seqs)
		st.seqs = seqs[:0]
		st.device = extTable{floor: st.device.floor} // release the old slots
		st.droppedFull = false
	}
	for t, m := range st.other {
		if t == tier || tier == allTiers {
			ix.otherBlocks.Add(-int64(m.len()))
			st.lowerCleared(t, m.len())
			delete(st.other, t)
		}
	}
}

// onDevice reports whether ev's blocks count toward overlap.
func onDevice(ev *kvevents.Event) bool {
	return ev.Tier == "" || ev.Tier == schemas.TierDevice
}
