package kvevents

import "slices"

// slot is a worker key interned to a small integer, so that the global
// lookup stores two bytes per holder instead of a twelve-byte key.
type slot = uint16

// maxSlots bounds the (worker, dp rank) pairs an Index tracks at once.
const maxSlots = 1 << 16

// slotSet is a sorted set of slots. Sorted so that Overlap can intersect
// sets by merging; sets are small (one entry per worker holding a block).
type slotSet []slot

func (s slotSet) has(x slot) bool {
	_, ok := slices.BinarySearch(s, x)
	return ok
}

// add returns s with x in it; s may be modified in place.
func (s slotSet) add(x slot) slotSet {
	i, ok := slices.BinarySearch(s, x)
	if ok {
		return s
	}
	return slices.Insert(s, i, x)
}

// remove returns s without x; s may be modified in place.
func (s slotSet) remove(x slot) slotSet {
	i, ok := slices.BinarySearch(s, x)
	if !ok {
		return s
	}
	return slices.Delete(s, i, i+1)
}

// intersectInto keeps in alive (sorted) the slots also in s, calls lost
// for each slot dropped, and returns the kept prefix of alive.
func (s slotSet) intersectInto(alive []slot, lost func(slot)) []slot {
	k, j := 0, 0
	for _, a := range alive {
		for j < len(s) && s[j] < a {
			j++
		}
		if j < len(s) && s[j] == a {
			alive[k] = a
			k++
			continue
		}
		lost(a)
	}
	return alive[:k]
}
