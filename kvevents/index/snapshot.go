package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// ErrBadSnapshot means ReadSnapshot's input is not a snapshot this
// version can load: wrong magic or version, truncated, checksum mismatch,
// or inconsistent contents.
var ErrBadSnapshot = errors.New("index: bad snapshot")

// Snapshot format, little-endian throughout:
//
//	"HSIX" u16 version
//	per (worker, dp rank), in slot order:
//	  'W' u64 worker u32 dp u16 slot
//	  u8 flags (seen, stale, untracked, droppedFull) u64 last id
//	  u8 n, n x (u64 lo, u64 hi) missing id ranges
//	  u8 tiers, each: u8 len, name ("" for device, always first),
//	    u64 count, u64 unheld, count x (u64 ext, u64 seq)
//	'E' u64 x 6 counters (unknownParent, unknownRemovals, cleared, gaps,
//	  outOfOrder, droppedFull)
//	u32 CRC-32C of everything before
//
// The slot is kept so that pages, and hence Stats.Hashes and the slots
// later workers get, come back as they were. The last unheld device pairs
// are those whose block the lookup does not list for the worker: two
// external hashes of one content are not reference counted, so removing
// one leaves the other in the worker's table but unindexed.
const (
	snapMagic   = "HSIX"
	snapVersion = 1

	snapTagWorker = 'W'
	snapTagEnd    = 'E'

	snapSeen        = 1 << 0
	snapStale       = 1 << 1
	snapUntracked   = 1 << 2
	snapDroppedFull = 1 << 3

	// snapChunk is the number of pairs read at a time, so that a
	// count the input does not back with bytes allocates nothing.
	snapChunk = 4096
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the index's complete state to w: each (worker, dp
// rank)'s blocks on every tier as (external hash, sequence hash) pairs,
// its event-order state, and the counters of Stats. Apply may run
// meanwhile: each pair is copied under its own lock, so it is consistent
// in itself, but pairs are copied at different moments and the counters
// at the end. A pair's lock is held while its blocks are encoded, not
// while they are written to w. It returns w's first error.
func (ix *Memory) WriteSnapshot(w io.Writer) error {
	ix.mu.RLock()
	sts := make([]*workerState, 0, len(ix.workers))
	for _, st := range ix.workers {
		sts = append(sts, st)
	}
	ix.mu.RUnlock()
	slices.SortFunc(sts, func(a, b *workerState) int { return int(a.slot) - int(b.slot) })

	sw := snapWriter{w: bufio.NewWriterSize(w, 1<<16)}
	sw.write(binary.LittleEndian.AppendUint16([]byte(snapMagic), snapVersion))
	var enc snapEncoder
	for _, st := range sts {
		if b := enc.worker(st); len(b) > 0 {
			sw.write(b)
		}
		if sw.err != nil {
			return sw.err
		}
	}
	b := append(enc.buf[:0], snapTagEnd)
	for _, c := range []uint64{ix.unknownParent.Load(), ix.unknownRemovals.Load(), ix.cleared.Load(),
		ix.gaps.Load(), ix.outOfOrder.Load(), ix.droppedFull.Load()} {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	sw.write(b)
	if sw.err == nil {
		_, sw.err = sw.w.Write(binary.LittleEndian.AppendUint32(nil, sw.crc))
	}
	if sw.err == nil {
		sw.err = sw.w.Flush()
	}
	return sw.err
}

type snapWriter struct {
	w   *bufio.Writer
	crc uint32
	err error
}

func (sw *snapWriter) write(b []byte) {
	if sw.err != nil {
		return
	}
	sw.crc = crc32.Update(sw.crc, castagnoli, b)
	_, sw.err = sw.w.Write(b)
}

// snapEncoder encodes one pair at a time into buf, reused.
type snapEncoder struct {
	buf    []byte
	unheld []extEntry
	es     []extEntry // the device pairs
}

// worker encodes st's record, or nothing if st was removed.
func (e *snapEncoder) worker(st *workerState) []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead {
		return nil
	}
	b := append(e.buf[:0], snapTagWorker)
	b = binary.LittleEndian.AppendUint64(b, st.key.WorkerID)
	b = binary.LittleEndian.AppendUint32(b, st.key.DpRank)
	b = binary.LittleEndian.AppendUint16(b, st.slot)
	o := &st.order
	var flags byte
	for _, f := range []struct {
		on  bool
		bit byte
	}{{o.seen, snapSeen}, {o.stale, snapStale}, {o.untracked, snapUntracked}, {st.droppedFull, snapDroppedFull}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, o.last)
	b = append(b, byte(len(o.missing)))
	for _, r := range o.missing {
		b = binary.LittleEndian.AppendUint64(b, r.lo)
		b = binary.LittleEndian.AppendUint64(b, r.hi)
	}
	tiers := make([]schemas.StorageTier, 0, len(st.other))
	for t, m := range st.other {
		if m.len() > 0 {
			tiers = append(tiers, t)
		}
	}
	slices.Sort(tiers)
	b = append(b, byte(1+len(tiers)))
	b = e.device(b, st)
	for _, t := range tiers {
		m := st.other[t]
		b = append(b, byte(len(t)))
		b = append(b, t...)
		b = binary.LittleEndian.AppendUint64(b, uint64(m.len()))
		b = binary.LittleEndian.AppendUint64(b, 0)
		b = appendPairs(b, m)
	}
	e.buf = b
	return b
}

// appendPairs appends every entry of m.
func appendPairs(b []byte, m *extTable) []byte {
	off := len(b)
	b = slices.Grow(b, 16*m.len())[:off+16*m.len()]
	m.all(func(key, val uint64) bool {
		binary.LittleEndian.PutUint64(b[off:], key)
		binary.LittleEndian.PutUint64(b[off+8:], val)
		off += 16
		return true
	})
	return b
}

// device appends st's device tier: the pairs whose block the page lists
// for st, then the others. That takes a lookup per pair (see the format),
// batched so that their cache misses overlap. st.mu is
// held, so st's bits cannot change; the page's words are read
// atomically, as Overlap reads them, since other pairs' writers may be
// changing their own bits meanwhile.
func (e *snapEncoder) device(b []byte, st *workerState) []byte {
	m := &st.device
	count := m.len()
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(count))
	unheldAt := len(b)
	b = binary.LittleEndian.AppendUint64(b, 0)
	off := len(b)
	b = slices.Grow(b, 16*count)[:off+16*count]
	es := slices.Grow(e.es[:0], count)
	m.all(func(key, val uint64) bool {
		es = append(es, extEntry{key, val})
		return true
	})
	e.es = es
	unheld := e.unheld[:0]
	var keys, got [walkBatch]uint64
	pg, bit := st.page, st.bit
	for chunk := range slices.Chunk(es, walkBatch) {
		for j, x := range chunk {
			keys[j] = x.val
		}
		pg.lookupMany(keys[:len(chunk)], got[:len(chunk)])
		for j, x := range chunk {
			if got[j]&bit == 0 {
				unheld = append(unheld, x)
				continue
			}
			binary.LittleEndian.PutUint64(b[off:], x.key)
			binary.LittleEndian.PutUint64(b[off+8:], x.val)
			off += 16
		}
	}
	for _, x := range unheld {
		binary.LittleEndian.PutUint64(b[off:], x.key)
		binary.LittleEndian.PutUint64(b[off+8:], x.val)
		off += 16
	}
	binary.LittleEndian.PutUint64(b[unheldAt:], uint64(len(unheld)))
	e.unheld = unheld
	return b
}

// ReadSnapshot replaces ix's contents (normally ix is new) with a
// snapshot's, read from r to its end; ix keeps its own options
// (WithShards, WithMaxBlocks, WithCapacity...). Input that is not a
// complete snapshot of this format version (wrong magic or version,
// truncated, trailing bytes, checksum mismatch, inconsistent contents)
// gives an error wrapping ErrBadSnapshot; another error of r is returned
// wrapped as is. On error ix is unchanged. Memory is allocated as the
// input's bytes arrive, never on a count's word alone. Overlap and
// Stats may run meanwhile; Apply and RemoveWorker must not.
func (ix *Memory) ReadSnapshot(r io.Reader) error {
	sr := snapReader{r: bufio.NewReaderSize(r, 1<<16)}
	ns, err := ix.readSnapshot(&sr)
	if err != nil {
		return err
	}
	ix.install(ns)
	return nil
}

// snapState is an index's state built aside from a snapshot.
type snapState struct {
	workers  map[kvevents.WorkerKey]*workerState
	keys     []kvevents.WorkerKey
	free     []slot
	pages    []*page
	entries  int64
	hashes   int64
	other    int64
	stale    int64
	counters [6]uint64
}

type snapReader struct {
	r   *bufio.Reader
	crc uint32
	n   int64
	tmp [16]byte
	raw []byte     // a chunk of pairs, as read
	ps  []extEntry // one tier's pairs

	// The current page's pairs, whose lookup is built once all are read.
	pw     []*workerState
	cnt    []int              // held blocks per shard of the page
	unheld map[slot]*[]uint64 // sequence hashes a pair holds but the lookup does not list
	flat   []bitEntry         // the page's held blocks, grouped by shard
}

func badSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
}

// full reads len(p) bytes into p.
func (sr *snapReader) full(p []byte) error {
	n, err := io.ReadFull(sr.r, p)
	sr.n += int64(n)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return badSnapshot("truncated at byte %d", sr.n)
	case err != nil:
		return fmt.Errorf("index: read snapshot: %w", err)
	}
	sr.crc = crc32.Update(sr.crc, castagnoli, p)
	return nil
}

func (sr *snapReader) bytes(n int) ([]byte, error) {
	p := sr.tmp[:n]
	return p, sr.full(p)
}

func (sr *snapReader) u8() (byte, error) {
	p, err := sr.bytes(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func (sr *snapReader) u64() (uint64, error) {
	p, err := sr.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func (ix *Memory) readSnapshot(sr *snapReader) (*snapState, error) {
	hdr, err := sr.bytes(6)
	if err != nil {
		return nil, err
	}
	if string(hdr[:4]) != snapMagic {
		return nil, badSnapshot("magic %q, want %q", hdr[:4], snapMagic)
	}
	if v := binary.LittleEndian.Uint16(hdr[4:]); v != snapVersion {
		return nil, badSnapshot("version %d, want %d", v, snapVersion)
	}
	ns := &snapState{workers: map[kvevents.WorkerKey]*workerState{}}
	sr.cnt = make([]int, 1<<ix.shardBits)
	for {
		tag, err := sr.u8()
		if err != nil {
			return nil, err
		}
		if tag == snapTagEnd {
			break
		}
		if tag != snapTagWorker {
			return nil, badSnapshot("record tag %#x at byte %d", tag, sr.n-1)
		}
		if err := ix.readWorker(sr, ns); err != nil {
			return nil, err
		}
	}
	if len(ns.pages) > 0 {
		ns.hashes += sr.flushPage(ns.pages[len(ns.pages)-1], ix.shardBits)
	}
	for i := range ns.counters {
		if ns.counters[i], err = sr.u64(); err != nil {
			return nil, err
		}
	}
	want := sr.crc
	p, err := sr.bytes(4)
	if err != nil {
		return nil, err
	}
	if got := binary.LittleEndian.Uint32(p); got != want {
		return nil, badSnapshot("checksum %#08x, want %#08x", got, want)
	}
	switch _, err := sr.r.ReadByte(); {
	case err == nil:
		return nil, badSnapshot("trailing bytes after byte %d", sr.n)
	case err != io.EOF:
		return nil, fmt.Errorf("index: read snapshot: %w", err)
	}
	for s, k := range ns.keys {
		if ns.workers[k] == nil || ns.workers[k].slot != slot(s) {
			ns.free = append(ns.free, slot(s))
		}
	}
	return ns, nil
}

func (ix *Memory) readWorker(sr *snapReader, ns *snapState) error {
	p, err := sr.bytes(15)
	if err != nil {
		return err
	}
	k := kvevents.WorkerKey{WorkerID: binary.LittleEndian.Uint64(p), DpRank: binary.LittleEndian.Uint32(p[8:])}
	s := binary.LittleEndian.Uint16(p[12:])
	flags := p[14]
	if ns.workers[k] != nil {
		return badSnapshot("worker %d dp %d twice", k.WorkerID, k.DpRank)
	}
	if len(ns.keys) > int(s) {
		return badSnapshot("worker %d dp %d: slot %d out of order", k.WorkerID, k.DpRank, s)
	}
	if flags&^(snapSeen|snapStale|snapUntracked|snapDroppedFull) != 0 {
		return badSnapshot("worker %d dp %d: flags %#x", k.WorkerID, k.DpRank, flags)
	}
	// Each page's lookup is built once all its pairs are read.
	pi := int(s) / pageSlots
	if n := len(ns.pages); n > 0 && pi >= n {
		ns.hashes += sr.flushPage(ns.pages[n-1], ix.shardBits)
	}
	for len(ns.pages) <= pi {
		ns.pages = append(ns.pages, newPage(ix.shardBits, ix.pageFloor))
	}
	for len(ns.keys) < int(s) {
		ns.keys = append(ns.keys, kvevents.WorkerKey{})
	}
	ns.keys = append(ns.keys, k)
	st := &workerState{key: k, slot: s, page: ns.pages[pi], bit: 1 << (s % pageSlots)}
	st.device.floor = ix.extFloor
	st.droppedFull = flags&snapDroppedFull != 0
	o := &st.order
	o.seen, o.stale, o.untracked = flags&snapSeen != 0, flags&snapStale != 0, flags&snapUntracked != 0
	if o.last, err = sr.u64(); err != nil {
		return err
	}
	nm, err := sr.u8()
	if err != nil {
		return err
	}
	switch {
	case nm > maxMissingRanges, nm > 0 && (!o.stale || o.untracked), o.stale && !o.untracked && nm == 0,
		o.untracked && !o.stale, !o.seen && (o.last != 0 || o.stale):
		return badSnapshot("worker %d dp %d: inconsistent order state", k.WorkerID, k.DpRank)
	}
	for range nm {
		p, err := sr.bytes(16)
		if err != nil {
			return err
		}
		r := idRange{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])}
		if r.lo > r.hi || r.hi >= o.last {
			return badSnapshot("worker %d dp %d: missing ids %d-%d", k.WorkerID, k.DpRank, r.lo, r.hi)
		}
		o.missing = append(o.missing, r)
	}
	nt, err := sr.u8()
	if err != nil {
		return err
	}
	if nt == 0 || nt > 4 {
		return badSnapshot("worker %d dp %d: %d tiers", k.WorkerID, k.DpRank, nt)
	}
	for i := range nt {
		if err := ix.readTier(sr, ns, st, i == 0); err != nil {
			return err
		}
	}
	st.rebuildLower()
	ns.workers[k] = st
	sr.pw = append(sr.pw, st)
	if o.stale {
		st.page.stale.Or(st.bit)
		ns.stale++
	}
	st.page.assigned |= st.bit
	return nil
}

func (ix *Memory) readTier(sr *snapReader, ns *snapState, st *workerState, device bool) error {
	nl, err := sr.u8()
	if err != nil {
		return err
	}
	name := make([]byte, nl)
	if err := sr.full(name); err != nil {
		return err
	}
	tier := schemas.StorageTier(name)
	var m *extTable
	switch {
	case device && tier == "":
		m = &st.device
	case !device && tier.Valid() && tier != schemas.TierDevice && st.other[tier] == nil:
		m = st.table(tier, true)
	default:
		return badSnapshot("worker %d dp %d: tier %q", st.key.WorkerID, st.key.DpRank, name)
	}
	p, err := sr.bytes(16)
	if err != nil {
		return err
	}
	count, unheld := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	if unheld > count || (!device && unheld > 0) || (!device && count == 0) {
		return badSnapshot("worker %d dp %d tier %q: %d pairs, %d unheld", st.key.WorkerID, st.key.DpRank, name, count, unheld)
	}
	ps := sr.ps[:0]
	for left := count; left > 0; {
		k := int(min(left, snapChunk))
		left -= uint64(k)
		if cap(sr.raw) < 16*k {
			sr.raw = make([]byte, 16*snapChunk)
		}
		raw := sr.raw[:16*k]
		if err := sr.full(raw); err != nil {
			return err
		}
		for i := 0; i < len(raw); i += 16 {
			ps = append(ps, extEntry{binary.LittleEndian.Uint64(raw[i:]), binary.LittleEndian.Uint64(raw[i+8:])})
		}
	}
	sr.ps = ps
	if !m.load(ps) {
		return badSnapshot("worker %d dp %d tier %q: an external hash twice", st.key.WorkerID, st.key.DpRank, name)
	}
	if !device {
		ns.other += int64(len(ps))
		return nil
	}
	ns.entries += int64(len(ps))
	var un []uint64
	if unheld > 0 {
		un = make([]uint64, 0, unheld)
		for _, x := range ps[len(ps)-int(unheld):] {
			un = append(un, x.val)
		}
		slices.Sort(un)
		if sr.unheld == nil {
			sr.unheld = map[slot]*[]uint64{}
		}
		sr.unheld[st.slot] = &un
	}
	shift, mask := shardOf(ix.shardBits)
	for _, x := range ps {
		if unheld == 0 || !isIn(un, x.val) {
			sr.cnt[spread(x.val)>>shift&mask]++
		}
	}
	return nil
}

// shardOf returns how a page of shardBits finds a key's shard: spread(key)
// >> shift & mask, as page.table does.
func shardOf(shardBits uint8) (shift uint8, mask uint64) {
	return 64 - shardBits, 1<<shardBits - 1
}

func isIn(sorted []uint64, v uint64) bool {
	_, ok := slices.BinarySearch(sorted, v)
	return ok
}

// flushPage builds pg's lookup from the device tables of its pairs (sr.pw):
// their held blocks are grouped by shard, counted beforehand, then each
// shard is built at once, so that its inserts stay in cache. It returns
// the page's live hashes.
func (sr *snapReader) flushPage(pg *page, shardBits uint8) int64 {
	off := make([]int, len(sr.cnt)+1)
	for i, c := range sr.cnt {
		off[i+1] = off[i] + c
	}
	total := off[len(sr.cnt)]
	flat := slices.Grow(sr.flat[:0], total)[:total]
	next := slices.Clone(off[:len(sr.cnt)])
	shift, mask := shardOf(shardBits)
	for _, st := range sr.pw {
		var un []uint64
		if p := sr.unheld[st.slot]; p != nil {
			un = *p
		}
		t := &st.device
		for i, x := range t.slots {
			if x.key == 0 && (i < len(t.slots)-1 || !t.zeroUsed) || (un != nil && isIn(un, x.val)) {
				continue
			}
			j := spread(x.val) >> shift & mask
			flat[next[j]] = bitEntry{x.val, st.bit}
			next[j]++
		}
	}
	var live int64
	for i := range sr.cnt {
		if es := flat[off[i]:off[i+1]]; len(es) > 0 {
			live += int64(pg.tabs[i].load(es))
		}
		sr.cnt[i] = 0
	}
	sr.flat, sr.pw = flat, sr.pw[:0]
	clear(sr.unheld)
	return live
}

// load fills an empty table with pairs, sized once; false if a key
// repeats.
func (t *extTable) load(pairs []extEntry) bool {
	n := max(slotsFor(len(pairs)), t.floor)
	t.slots, t.count, t.zeroUsed = make([]extEntry, n+1), 0, false
	s := t.slots[:n]
	for _, x := range pairs {
		if x.key == 0 {
			if t.zeroUsed {
				return false
			}
			t.slots[n], t.zeroUsed = x, true
			continue
		}
		i := homeSlot(spread(x.key), n)
		for {
			k := s[i].key
			if k == x.key {
				return false
			}
			if k == 0 {
				s[i] = x
				t.count++
				break
			}
			if i++; i == n {
				i = 0
			}
		}
	}
	return true
}

// load fills an unpublished, empty table with es (a key may repeat with
// other bits), sized for len(es) keys and rebuilt smaller if many repeat,
// and returns its live keys.
func (t *bitTable) load(es []bitEntry) int {
	n := max(slotsFor(len(es)), t.floor)
	d := &bitSlots{s: make([]bitEntry, n+1), n: n}
	s := d.s[:n]
	used := 0
	for _, e := range es {
		if e.key == 0 {
			d.s[n].bits |= e.bits
			continue
		}
		i := homeSlot(spread(e.key)<<t.shift, n)
		for {
			k := s[i].key
			if k == e.key {
				s[i].bits |= e.bits
				break
			}
			if k == 0 {
				s[i] = e
				used++
				break
			}
			if i++; i == n {
				i = 0
			}
		}
	}
	t.used, t.live = used, used
	if d.s[n].bits != 0 {
		t.live++
	}
	t.cur.Store(d)
	if m := max(slotsFor(t.live), t.floor); m < n*3/4 {
		t.rebuild(m)
	}
	return t.live
}

// install replaces ix's state with ns. Old pairs are marked dead under
// their locks, so that an Apply that resolved one retries on the new.
func (ix *Memory) install(ns *snapState) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, st := range ix.workers {
		st.mu.Lock()
		st.dead = true
		st.mu.Unlock()
	}
	ix.wmu.Lock()
	ix.workers, ix.keys, ix.free, ix.pages = ns.workers, ns.keys, ns.free, ns.pages
	ix.live.Clear()
	for k, st := range ix.workers {
		ix.live.Store(k, st)
	}
	ix.entries.Store(ns.entries)
	ix.hashes.Store(ns.hashes)
	ix.wmu.Unlock()
	ix.otherBlocks.Store(ns.other)
	ix.stale.Store(ns.stale)
	c := ns.counters
	ix.unknownParent.Store(c[0])
	ix.unknownRemovals.Store(c[1])
	ix.cleared.Store(c[2])
	ix.gaps.Store(c[3])
	ix.outOfOrder.Store(c[4])
	ix.droppedFull.Store(c[5])
}
