package index

// extTable maps one worker's external (engine) block hashes on one tier to
// their sequence hashes, for parent lookup and removals. Only the worker's
// own lock guards it and nothing reads it concurrently, so it is plain
// memory: open addressing with linear probing and backward-shift deletion
// (no tombstones). Key 0 is the empty marker; a real key 0 lives in the
// spare slot at index n.
type extTable struct {
	slots    []extEntry // n home slots, then the spare slot of key 0
	count    int        // entries in the home slots
	floor    int        // fewest home slots once allocated (WithCapacity)
	zeroUsed bool
}

type extEntry struct{ key, val uint64 }

func (t *extTable) n() int { return max(len(t.slots)-1, 0) }

// len returns the number of entries.
func (t *extTable) len() int {
	if t.zeroUsed {
		return t.count + 1
	}
	return t.count
}

// reserve makes room for k insertions without a resize, so that slot
// indexes from find stay valid across them.
func (t *extTable) reserve(k int) {
	if len(t.slots) == 0 || tableFull(t.count, k, t.n()) {
		t.resize(max(slotsFor(t.count+k), t.floor))
	}
}

// find returns key's slot and true, or the slot where it would be
// inserted and false. The table must have slots (reserve first).
func (t *extTable) find(key uint64) (int, bool) {
	return t.findFrom(key, homeSlot(spread(key), t.n()))
}

// findFrom is find given key's home slot i, homeSlot(spread(key), t.n()).
func (t *extTable) findFrom(key uint64, i int) (int, bool) {
	n := t.n()
	if key == 0 {
		return n, t.zeroUsed
	}
	s := t.slots[:n]
	for {
		switch s[i].key {
		case key:
			return i, true
		case 0:
			return i, false
		}
		if i++; i == n {
			i = 0
		}
	}
}

// get returns key's value.
func (t *extTable) get(key uint64) (uint64, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	i, ok := t.find(key)
	return t.slots[i].val, ok
}

// insertAt stores key at slot i, which find returned for it with false;
// room must have been reserved.
func (t *extTable) insertAt(i int, key, val uint64) {
	t.slots[i] = extEntry{key, val}
	if key == 0 {
		t.zeroUsed = true
	} else {
		t.count++
	}
}

// put stores key -> val and reports whether key is new.
func (t *extTable) put(key, val uint64) bool {
	t.reserve(1)
	i, ok := t.find(key)
	if ok {
		t.slots[i].val = val
		return false
	}
	t.insertAt(i, key, val)
	return true
}

// remove deletes key and returns its value. It never resizes, so that a
// caller may remove many keys and call shrink once.
func (t *extTable) remove(key uint64) (uint64, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	i, ok := t.find(key)
	if !ok {
		return 0, false
	}
	val := t.slots[i].val
	if key == 0 {
		t.slots[i] = extEntry{}
		t.zeroUsed = false
		return val, true
	}
	t.count--
	// Backward shift: pull later entries of the probe run into the hole
	// unless that would move them before their home slot.
	n := t.n()
	hole := i
	for j := i + 1; ; j++ {
		if j == n {
			j = 0
		}
		e := t.slots[j]
		if e.key == 0 {
			break
		}
		h := homeSlot(spread(e.key), n)
		// e may fill the hole iff its home is not cyclically in (hole, j].
		if (j > hole && (h <= hole || h > j)) || (j < hole && h <= hole && h > j) {
			t.slots[hole] = e
			hole = j
		}
	}
	t.slots[hole] = extEntry{}
	return val, true
}

// shrink releases memory after removals.
func (t *extTable) shrink() {
	if n := t.n(); n > max(minTableSlots, t.floor) && t.count*shrinkDivisor < n {
		t.resize(max(slotsFor(t.count), t.floor))
	}
}

func (t *extTable) resize(n int) {
	old := t.slots
	t.slots = newEntries[extEntry](n + 1)
	if len(old) == 0 {
		return
	}
	t.slots[n] = old[len(old)-1]
	for _, e := range old[:len(old)-1] {
		if e.key == 0 {
			continue
		}
		i := homeSlot(spread(e.key), n)
		for t.slots[i].key != 0 {
			if i++; i == n {
				i = 0
			}
		}
		t.slots[i] = e
	}
}

// all calls f for every entry until f returns false.
func (t *extTable) all(f func(key, val uint64) bool) {
	for i, e := range t.slots {
		if e.key != 0 || (i == len(t.slots)-1 && t.zeroUsed) {
			if !f(e.key, e.val) {
				return
			}
		}
	}
}
