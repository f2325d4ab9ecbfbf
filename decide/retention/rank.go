package retention

import (
	"cmp"
	"container/heap"
	"slices"
)

// compareCands is a plan's order: best first (most expected reuses),
// ties by depth (a prefix before what extends it), then by key, so the
// order is total and a plan does not depend on map iteration.
func compareCands(a, b *cand) int {
	return cmp.Or(cmp.Compare(b.e, a.e), cmp.Compare(a.st.depth, b.st.depth), cmp.Compare(a.key, b.key))
}

// bestFirst hands out the candidates a plan keeps in compareCands order,
// one at a time. A plan takes the best pages until its budget is spent:
// a few thousand of up to DefaultMaxTracked tracked, every Interval.
// Sorting them all was most of a plan's time (and of whatif's planner
// rows); a heap costs O(n) to build and O(log n) per page taken.
type bestFirst struct {
	c []cand
	h []int32
}

// newBestFirst orders the candidates for which keep is true.
func newBestFirst(c []cand, keep func(*cand) bool) *bestFirst {
	b := &bestFirst{c: c, h: make([]int32, 0, len(c))}
	for i := range c {
		if keep(&c[i]) {
			b.h = append(b.h, int32(i))
		}
	}
	heap.Init(b)
	return b
}

// next returns the index of the best candidate not yet handed out, and
// false when none is left.
func (b *bestFirst) next() (int, bool) {
	if len(b.h) == 0 {
		return 0, false
	}
	return int(heap.Pop(b).(int32)), true
}

func (b *bestFirst) Len() int           { return len(b.h) }
func (b *bestFirst) Less(i, j int) bool { return compareCands(&b.c[b.h[i]], &b.c[b.h[j]]) < 0 }
func (b *bestFirst) Swap(i, j int)      { b.h[i], b.h[j] = b.h[j], b.h[i] }
func (b *bestFirst) Push(x any)         { b.h = append(b.h, x.(int32)) }
func (b *bestFirst) Pop() any {
	x := b.h[len(b.h)-1]
	b.h = b.h[:len(b.h)-1]
	return x
}

// forgotten returns the candidates a plan forgets: with the candidates
// in compareCands order, those from the end that are dead, up to the
// last that is not (and all beyond max, when there are more). Within
// max it takes one pass: a dead candidate is forgotten when it sorts
// after every live one.
func forgotten(c []cand, max int, dead func(*cand) bool) []int {
	var out []int
	if len(c) > max {
		// Beyond MaxTracked: rare (a million pages), sort them.
		idx := make([]int, len(c))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return compareCands(&c[a], &c[b]) })
		for k := len(idx) - 1; k >= 0; k-- {
			if k >= max || dead(&c[idx[k]]) {
				out = append(out, idx[k])
				continue
			}
			break
		}
		return out
	}
	live := -1
	for i := range c {
		if !dead(&c[i]) && (live < 0 || compareCands(&c[i], &c[live]) > 0) {
			live = i
		}
	}
	for i := range c {
		if dead(&c[i]) && (live < 0 || compareCands(&c[i], &c[live]) > 0) {
			out = append(out, i)
		}
	}
	return out
}
