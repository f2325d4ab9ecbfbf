package evictstudy

import (
	"math"
	"time"
)

// never is the next use of a page that is not used again.
const never = math.MaxInt32

// nextUses returns, for every request i and page j of it, the index of
// the next request that holds the same page (never if none), flattened
// in request order.
func nextUses(a *Accesses) [][]int32 {
	out := make([][]int32, len(a.List))
	last := make([]int32, a.Keys)
	for i := range last {
		last[i] = never
	}
	for i := len(a.List) - 1; i >= 0; i-- {
		keys := a.List[i].Keys
		nu := make([]int32, len(keys))
		for j, k := range keys {
			nu[j] = last[k]
			last[k] = int32(i)
		}
		out[i] = nu
	}
	return out
}

// Belady keeps, after each request, the capacity pages of the store and
// the prompt whose next use comes first (deeper pages go first on a
// tie): Belady's MIN, free to turn a written page away. Write must be
// called for a's requests in order.
type Belady struct {
	cap   int
	next  [][]int32
	depth []int32
	at    []int32 // page → its next use
	h     *worstHeap
	i     int // the request the next Write serves
}

// NewBelady returns the clairvoyant store of capacity pages for a.
func NewBelady(a *Accesses, capacity int) Policy {
	b := &Belady{cap: max(capacity, 1), next: nextUses(a), depth: a.Depth, at: make([]int32, a.Keys)}
	b.h = newWorstHeap(a.Keys, func(x, y Key) bool {
		if b.at[x] != b.at[y] {
			return b.at[x] > b.at[y]
		}
		if b.depth[x] != b.depth[y] {
			return b.depth[x] > b.depth[y]
		}
		return x > y
	})
	return b
}

func (b *Belady) Contains(k Key) bool { return b.h.has(k) }
func (b *Belady) Len() int            { return b.h.len() }

func (b *Belady) Write(_ time.Duration, keys []Key) {
	nu := b.next[b.i]
	b.i++
	for j, k := range keys {
		b.at[k] = nu[j]
		if b.h.has(k) {
			b.h.fix(k)
		} else {
			b.h.push(k)
		}
	}
	for b.h.len() > b.cap {
		b.h.pop()
	}
}
