package index

import "sync/atomic"

// bitTable maps a sequence hash to the bitmap of the 64 slots of one page
// that hold the block on device. One writer at a time (Memory.wmu); readers
// take no lock and read words atomically. That is sound because a key,
// once written to a slot, stays in that slot for the life of the slot
// array: removing a block only clears its bits, leaving the key as a
// tombstone that the same key reuses. Readers therefore never miss a key
// that was present when they started probing, and never read one key's
// bits under another key. Tombstones are dropped when the writer rebuilds
// the array (on growth, or once few keys are live), and publishes it
// atomically; a reader still on the old array sees the state as of the
// swap, and the garbage collector frees the old array when it is done.
type bitTable struct {
	cur   atomic.Pointer[bitSlots]
	used  int   // home slots with a key, tombstones included (writer only)
	live  int   // keys with bits, key 0 included (writer only)
	floor int   // fewest home slots once allocated (WithCapacity; writer only)
	shift uint8 // shard bits, shifted out of spread(key) for the home slot
}

// bitSlots is one published array: n home slots, then a spare slot whose
// bits are key 0's.
type bitSlots struct {
	s []bitEntry
	n int
}

type bitEntry struct{ key, bits uint64 }

// lookup returns the bits of key; h is spread(key) << t.shift.
func (t *bitTable) lookup(key, h uint64) uint64 {
	d := t.cur.Load()
	if d == nil {
		return 0
	}
	return d.lookupFrom(key, homeSlot(h, d.n))
}

// lookupFrom returns the bits of key, probing from its home slot i; d
// may be nil (an empty table).
func (d *bitSlots) lookupFrom(key uint64, i int) uint64 {
	if d == nil {
		return 0
	}
	if key == 0 {
		return atomic.LoadUint64(&d.s[d.n].bits)
	}
	s := d.s[:d.n]
	for {
		e := &s[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			return atomic.LoadUint64(&e.bits)
		case 0:
			return 0
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// slot returns the entry of key, inserting it (with no bits) if insert;
// nil if absent and not insert. Writer only.
func (t *bitTable) slot(key, h uint64, insert bool) *bitEntry {
	d := t.cur.Load()
	if d == nil {
		if !insert {
			return nil
		}
		d = t.rebuild(max(slotsFor(1), t.floor))
	}
	if key == 0 {
		return &d.s[d.n]
	}
	for {
		n := d.n
		i := homeSlot(h, n)
		for {
			e := &d.s[i]
			k := e.key // the writer's own writes need no atomic load
			if k == key {
				return e
			}
			if k == 0 {
				break
			}
			if i++; i == n {
				i = 0
			}
		}
		if !insert {
			return nil
		}
		if tableFull(t.used, 1, n) {
			d = t.rebuild(max(slotsFor(t.live+1), t.floor))
			continue
		}
		e := &d.s[i]
		t.used++
		// bits stay 0 until the caller sets them; a reader seeing the key
		// early reads "no holder", which is true.
		atomic.StoreUint64(&e.key, key)
		return e
	}
}

// set adds bit to key's holders and reports whether key became live.
func (t *bitTable) set(key, h, bit uint64) bool {
	e := t.slot(key, h, true)
	old := e.bits
	if old&bit != 0 {
		return false
	}
	atomic.StoreUint64(&e.bits, old|bit)
	if old == 0 {
		t.live++
		return true
	}
	return false
}

// setFrom is set for a key whose array and home slot were read (for
// prefetching) before the writer lock: d is the array then published (nil
// if none) and i key's home slot in it. If d is still current and the key
// is found or has room, it needs no rehash; otherwise it falls back to
// set. shift is the page's shard bits.
func (t *bitTable) setFrom(key, bit uint64, d *bitSlots, i int, shift uint8) bool {
	if d == nil || key == 0 || d != t.cur.Load() {
		return t.set(key, spread(key)<<shift, bit)
	}
	s := d.s[:d.n]
	for {
		e := &s[i]
		switch e.key {
		case key:
			old := e.bits
			if old&bit != 0 {
				return false
			}
			atomic.StoreUint64(&e.bits, old|bit)
			if old == 0 {
				t.live++
				return true
			}
			return false
		case 0:
			if tableFull(t.used, 1, d.n) {
				return t.set(key, spread(key)<<shift, bit)
			}
			t.used++
			t.live++
			// Bits before key: a reader that sees the key sees its bits.
			atomic.StoreUint64(&e.bits, bit)
			atomic.StoreUint64(&e.key, key)
			return true
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// clear removes bit from key's holders and reports whether key died.
func (t *bitTable) clear(key, h, bit uint64) bool {
	e := t.slot(key, h, false)
	if e == nil || e.bits&bit == 0 {
		return false
	}
	nb := e.bits &^ bit
	atomic.StoreUint64(&e.bits, nb)
	if nb != 0 {
		return false
	}
	t.live--
	if n := t.cur.Load().n; n > max(minTableSlots, t.floor) && t.live*shrinkDivisor < n {
		t.rebuild(max(slotsFor(t.live), t.floor))
	}
	return true
}

// rebuild copies the live keys into a new array of n home slots and
// publishes it. The new array is written plainly: no reader can see it
// before the atomic publication.
func (t *bitTable) rebuild(n int) *bitSlots {
	nd := &bitSlots{s: newEntries[bitEntry](n + 1), n: n}
	t.used, t.live = 0, 0
	if d := t.cur.Load(); d != nil {
		if z := d.s[d.n].bits; z != 0 {
			nd.s[n].bits = z
			t.live++
		}
		for _, e := range d.s[:d.n] {
			if e.bits == 0 {
				continue // empty or tombstone
			}
			i := homeSlot(spread(e.key)<<t.shift, n)
			for nd.s[i].key != 0 {
				if i++; i == n {
					i = 0
				}
			}
			nd.s[i] = e
			t.used++
			t.live++
		}
	}
	t.cur.Store(nd)
	return nd
}
