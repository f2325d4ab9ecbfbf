package evictstudy

import (
	"math"
	"time"
)

// LHD's constants (Beckmann et al., "LHD: Improving Cache Hit Rate by
// Maximizing Hit Density", NSDI'18), scaled to a page store: pages are
// classed by their uses so far (the last class: that many or more), ages
// fall into log-spaced buckets of lhdPerOctave per doubling from one
// second, and the densities are recomputed every lhdEvery page accesses
// from counts that decay by lhdDecay at each recomputation (a memory of
// about lhdEvery ÷ (1 − lhdDecay) accesses). Eviction takes the lowest
// density among lhdSamples leaves drawn at random.
const (
	lhdClasses   = 6
	lhdPerOctave = 4
	lhdBuckets   = 16 * lhdPerOctave // up to 2^16 s
	lhdEvery     = 1024
	lhdDecay     = 0.98
	lhdSamples   = 64
)

// LHD evicts, among the leaves of the store's prefix tree (leafStore),
// the page of least hit density: of the pages of its class that reached
// its age, the hits they went on to get per page-second they went on to
// hold the store, learned online from the hits and evictions seen at
// each age. It goes by the two things the retention planner can see of a
// page, how often it was used and how long ago, and learns how they
// predict reuse in this traffic rather than fixing the order (LRU: by
// age alone; LFU: by count).
type LHD struct {
	s    *leafStore
	uses []int32 // every page's uses so far, resident or not
	// branches, when set, counts the distinct pages seen continuing
	// each page, and a page continued two ways or more is classed apart
	// (by uses 1, 2, 3+): a shared prefix, as a system prompt or a
	// document that several conversations extend.
	branches []int32
	parent   []Key
	hits     [lhdClasses][lhdBuckets]float64
	evicts   [lhdClasses][lhdBuckets]float64
	density  [lhdClasses][lhdBuckets]float64
	since    int
	keys     []Key
}

// NewLHD returns an empty LHD store of capacity pages, classing pages by
// their uses (1 to 5+).
func NewLHD(a *Accesses, capacity int) Policy {
	return newLHD(a, capacity)
}

// NewLHDBranches returns an empty LHD store of capacity pages, classing
// pages by their uses (1, 2, 3+) and by whether they were seen continued
// two ways or more.
func NewLHDBranches(a *Accesses, capacity int) Policy {
	p := newLHD(a, capacity)
	p.branches, p.parent = make([]int32, a.Keys), a.Parent
	return p
}

func newLHD(a *Accesses, capacity int) *LHD {
	p := &LHD{s: newLeafStore(a, capacity, lhdSamples), uses: make([]int32, a.Keys)}
	// Before anything is learned, density falls with age alone: LRU.
	for c := range p.density {
		for b := range p.density[c] {
			p.density[c][b] = 1 / float64(b+1)
		}
	}
	return p
}

func (p *LHD) Contains(k Key) bool { return p.s.Contains(k) }
func (p *LHD) Len() int            { return p.s.Len() }

func lhdBucket(age time.Duration) int {
	s := age.Seconds()
	if s < 1 {
		return 0
	}
	return min(int(math.Log2(s)*lhdPerOctave)+1, lhdBuckets-1)
}

// lhdAge is the lower edge of bucket b, in seconds.
func lhdAge(b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Exp2(float64(b-1) / lhdPerOctave)
}

func (p *LHD) class(k Key) int {
	if p.branches == nil {
		return min(int(p.uses[k]), lhdClasses-1)
	}
	c := min(int(p.uses[k]), 3) - 1 // a resident page was used at least once
	if p.branches[k] >= 2 {
		c += 3
	}
	return max(c, 0)
}

func (p *LHD) Write(now time.Duration, keys []Key) {
	// Mark the request's pages first, so that none of them is the victim
	// of another's insertion.
	for _, k := range keys {
		if p.s.Contains(k) {
			p.hits[p.class(k)][lhdBucket(now-p.s.last[k])]++
		}
		if p.branches != nil && p.uses[k] == 0 {
			if par := p.parent[k]; par != nilKey {
				p.branches[par]++
			}
		}
		p.uses[k]++
		p.s.last[k] = now
	}
	p.s.write(now, keys, func(k Key) float64 { return p.density[p.class(k)][lhdBucket(now-p.s.last[k])] },
		func(k Key) { p.evicts[p.class(k)][lhdBucket(now-p.s.last[k])]++ })
	if p.since += len(keys); p.since >= lhdEvery {
		p.since = 0
		p.recompute()
	}
}

// recompute sets each class's density at each age a: the hits of the
// pages that reached a, over the page-seconds they held the store after
// a.
func (p *LHD) recompute() {
	for c := range p.hits {
		var hitsAfter, eventsAfter, life float64
		for b := lhdBuckets - 1; b >= 0; b-- {
			width := 0.0
			if b+1 < lhdBuckets {
				width = lhdAge(b+1) - lhdAge(b)
			}
			mid := (lhdAge(b) + lhdAge(min(b+1, lhdBuckets-1))) / 2
			life += eventsAfter * width
			h, e := p.hits[c][b], p.evicts[c][b]
			life += (h + e) * (mid - lhdAge(b))
			hitsAfter += h
			eventsAfter += h + e
			// No page was seen past this age: none is expected to hit.
			p.density[c][b] = 0
			if life > 0 {
				p.density[c][b] = hitsAfter / life
			}
			p.hits[c][b] *= lhdDecay
			p.evicts[c][b] *= lhdDecay
		}
	}
}
