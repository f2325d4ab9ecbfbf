package evictstudy

import (
	"container/heap"
	"math"
	"time"
)

// DefaultPinShare is the share of the store NextTurnPins may pin: the
// retention planner's default budget (retention.DefaultBudgetShare).
const DefaultPinShare = 0.5

// NextTurnPins (oracle) is LRU plus an oracle of the conversations: after each
// request, the pages that its next turn (the workload's Next link) will
// find again are pinned until that turn arrives, so LRU cannot evict
// them, as long as the pins stay within a share of the store (first come,
// first pinned). It is not online: it is the most that pinning announced
// next turns could add to LRU, with a perfect announcement of every next
// turn, its time and its prompt.
//
// Its online counterpart (NewSessionPins) pins every prompt, whole, for
// the learned gap to a next turn, not knowing whether one comes.
type NextTurnPins struct {
	lru    *LRU
	online bool
	gaps   *gapQuantile
	// wrote maps a request to when it was written, until its next turn
	// (online: the gap is learned when that turn comes).
	wrote  map[int]time.Duration
	budget int
	// Pinned pages are out of lru's list: pinned[k] is when the last pin
	// on k lapses (0: not pinned); due orders the pins by lapse.
	pinned []time.Duration
	n      int
	due    pinHeap
	next   map[int]int // workload request → its index in list
	list   []Access
	i      int // the request the next Write serves
}

// NewNextTurnPins returns a maker of LRU stores with oracle next-turn
// pins within share of the store.
func NewNextTurnPins(share float64) func(a *Accesses, capacity int) Policy {
	return func(a *Accesses, capacity int) Policy {
		p := &NextTurnPins{lru: NewLRU(a, capacity).(*LRU), pinned: make([]time.Duration, a.Keys),
			next: make(map[int]int, len(a.List)), list: a.List}
		p.budget = int(share * float64(p.lru.cap))
		for i, acc := range a.List {
			p.next[acc.Request] = i
		}
		return p
	}
}

// DefaultSessionPinQuantile is the quantile of the learned gaps to a
// next turn that an online session pin lasts: most next turns come
// within it, and a pin wasted on a session that ended lapses by then.
const DefaultSessionPinQuantile = 0.9

// NewSessionPins returns a maker of LRU stores that pin every prompt for
// the DefaultSessionPinQuantile of the gaps to a next turn seen so far
// (a minute until one is seen), within share of the store: what a
// retention planner could do knowing only the past.
func NewSessionPins(share float64) func(a *Accesses, capacity int) Policy {
	return func(a *Accesses, capacity int) Policy {
		p := NewNextTurnPins(share)(a, capacity).(*NextTurnPins)
		p.online, p.gaps, p.wrote = true, newGapQuantile(DefaultSessionPinQuantile, time.Minute), map[int]time.Duration{}
		return p
	}
}

func (p *NextTurnPins) Contains(k Key) bool { return p.pinned[k] > 0 || p.lru.Contains(k) }
func (p *NextTurnPins) Len() int            { return p.n + p.lru.Len() }

func (p *NextTurnPins) Write(now time.Duration, keys []Key) {
	acc := p.list[p.i]
	p.i++
	// Pins that lapsed by now give their pages back to LRU, as used now:
	// their turn is this request or came just before it.
	for len(p.due) > 0 && p.due[0].until <= now {
		e := heap.Pop(&p.due).(pinEntry)
		if p.pinned[e.key] == e.until {
			p.pinned[e.key] = 0
			p.n--
			p.lru.q.pushFront(e.key)
		}
	}
	// The LRU write-through, with the store's room less the pinned pages.
	var room []Key
	for _, k := range keys {
		if p.pinned[k] == 0 {
			room = append(room, k)
		}
	}
	p.lru.cap -= p.n
	if p.lru.cap > 0 {
		p.lru.Write(now, room)
	}
	p.lru.cap += p.n
	var until time.Duration
	var shared []Key
	if p.online {
		// This request's arrival tells the gap from the turn it
		// continues, if it continues one (as hintstream links turns by
		// their prompts); then it is pinned for the learned gap.
		if t, ok := p.wrote[acc.Request]; ok {
			p.gaps.add(now - t)
			delete(p.wrote, acc.Request)
		}
		if acc.Next >= 0 {
			p.wrote[acc.Next] = now
		}
		until, shared = now+max(p.gaps.get(), 1), keys
	} else {
		nx, ok := p.next[acc.Next]
		if acc.Next < 0 || !ok {
			return
		}
		until = max(p.list[nx].At, now+1)
		for j, k := range keys {
			if j >= len(p.list[nx].Keys) || p.list[nx].Keys[j] != k {
				break
			}
			shared = keys[:j+1]
		}
	}
	for _, k := range shared {
		switch {
		case p.pinned[k] > 0:
			if until > p.pinned[k] {
				p.pinned[k] = until
				heap.Push(&p.due, pinEntry{until, k})
			}
		case p.lru.Contains(k) && p.n < p.budget:
			p.lru.q.remove(k)
			p.pinned[k] = until
			p.n++
			heap.Push(&p.due, pinEntry{until, k})
		}
	}
}

type pinEntry struct {
	until time.Duration
	key   Key
}

type pinHeap []pinEntry

func (h pinHeap) Len() int           { return len(h) }
func (h pinHeap) Less(i, j int) bool { return h[i].until < h[j].until }
func (h pinHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pinHeap) Push(x any)        { *h = append(*h, x.(pinEntry)) }
func (h *pinHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// gapQuantile estimates a quantile of a stream of gaps: a histogram of
// log-spaced buckets (eight per doubling, from a millisecond), so its
// estimate is within 9% of the true quantile of what it saw.
type gapQuantile struct {
	q     float64
	def   time.Duration
	count [40 * 8]int64
	n     int64
}

func newGapQuantile(q float64, def time.Duration) *gapQuantile {
	return &gapQuantile{q: q, def: def}
}

func gapBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	return min(int(math.Log2(ms)*8)+1, 40*8-1)
}

func (g *gapQuantile) add(d time.Duration) {
	g.count[gapBucket(d)]++
	g.n++
}

// get returns the quantile's bucket's upper edge, or the default while
// nothing was seen.
func (g *gapQuantile) get() time.Duration {
	if g.n == 0 {
		return g.def
	}
	want := int64(math.Ceil(g.q * float64(g.n)))
	var seen int64
	for b, c := range g.count {
		if seen += c; seen >= want {
			return time.Duration(math.Exp2(float64(b)/8) * float64(time.Millisecond))
		}
	}
	return g.def
}
