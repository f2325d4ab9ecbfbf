package evictstudy

import (
	"math"
	"math/rand/v2"
	"time"
)

// LHD's constants (Beckmann et al., "LHD: Improving Cache Hit Rate by
// Maximizing Hit Density", NSDI'18), scaled to a page store: pages are
// classed by their uses so far (0..lhdClasses-1, the last one "or
// more"), ages fall into log-spaced buckets of lhdPerOctave per doubling
// from one second, and the densities are recomputed every lhdEvery page
// accesses from counts that decay by lhdDecay at each recomputation (a
// memory of about lhdEvery ÷ (1 − lhdDecay) accesses). Eviction takes
// the lowest density among lhdSamples resident pages drawn at random.
const (
	lhdClasses   = 5
	lhdPerOctave = 4
	lhdBuckets   = 16 * lhdPerOctave // up to 2^16 s
	lhdEvery     = 1024
	lhdDecay     = 0.98
	lhdSamples   = 64
)

// LHD evicts, among the pages no resident page continues (the leaves of
// the store's prefix tree: an inner page's loss would waste the pages
// after it), the one of least hit density: of the pages of its class
// that reached its age, the hits they went on to get per page-second
// they went on to hold the store, learned online from the hits and
// evictions seen at each age. It goes by the same two things the
// retention planner can see, how often a page was used and how long ago,
// and learns how they predict reuse in this traffic rather than fixing
// the order (LRU: by age alone; LFU: by count).
type LHD struct {
	cap      int
	uses     []int32 // every page's uses so far, resident or not
	last     []time.Duration
	slot     []int32 // index in resident, or -1
	resident []Key
	parent   []Key
	children []int32 // resident pages continuing each page
	leafSlot []int32 // index in leaves, or -1
	leaves   []Key
	hits     [lhdClasses][lhdBuckets]float64
	evicts   [lhdClasses][lhdBuckets]float64
	density  [lhdClasses][lhdBuckets]float64
	since    int
	rng      *rand.Rand
	keys     []Key
}

// NewLHD returns an empty LHD store of capacity pages.
func NewLHD(a *Accesses, capacity int) Policy {
	p := &LHD{cap: max(capacity, 1), uses: make([]int32, a.Keys), last: make([]time.Duration, a.Keys),
		slot: make([]int32, a.Keys), rng: rand.New(rand.NewPCG(1, 2)),
		parent: a.Parent, children: make([]int32, a.Keys), leafSlot: make([]int32, a.Keys)}
	for i := range p.slot {
		p.slot[i], p.leafSlot[i] = -1, -1
	}
	// Before anything is learned, density falls with age alone: LRU.
	for c := range p.density {
		for b := range p.density[c] {
			p.density[c][b] = 1 / float64(b+1)
		}
	}
	return p
}

func (p *LHD) Contains(k Key) bool { return p.slot[k] >= 0 }
func (p *LHD) Len() int            { return len(p.resident) }

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

func (p *LHD) class(k Key) int { return min(int(p.uses[k]), lhdClasses-1) }

func (p *LHD) Write(now time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	// Mark the request's pages first, so that none of them is the victim
	// of another's insertion.
	for _, k := range p.keys {
		if p.Contains(k) {
			p.hits[p.class(k)][lhdBucket(now-p.last[k])]++
		}
		p.uses[k]++
		p.last[k] = now
	}
	// New pages go in prompt order, so the store stays closed under
	// prefixes: each one's parent is resident, none of its children.
	for _, k := range keys {
		if p.Contains(k) {
			continue
		}
		if len(p.resident) >= p.cap {
			p.evict(now)
		}
		p.slot[k] = int32(len(p.resident))
		p.resident = append(p.resident, k)
		p.addLeaf(k)
		if par := p.parent[k]; par != nilKey && p.Contains(par) {
			if p.children[par]++; p.children[par] == 1 {
				p.dropLeaf(par)
			}
		}
	}
	if p.since += len(keys); p.since >= lhdEvery {
		p.since = 0
		p.recompute()
	}
}

func (p *LHD) addLeaf(k Key) {
	p.leafSlot[k] = int32(len(p.leaves))
	p.leaves = append(p.leaves, k)
}

func (p *LHD) dropLeaf(k Key) {
	i := p.leafSlot[k]
	last := p.leaves[len(p.leaves)-1]
	p.leaves[i] = last
	p.leafSlot[last] = i
	p.leaves = p.leaves[:len(p.leaves)-1]
	p.leafSlot[k] = -1
}

func (p *LHD) evict(now time.Duration) {
	victim, worst := nilKey, math.Inf(1)
	for range min(lhdSamples, len(p.leaves)) {
		k := p.leaves[p.rng.IntN(len(p.leaves))]
		if p.last[k] == now {
			continue // this request's
		}
		if d := p.density[p.class(k)][lhdBucket(now-p.last[k])]; d < worst {
			victim, worst = k, d
		}
	}
	if victim == nilKey {
		victim = p.leaves[p.rng.IntN(len(p.leaves))]
	}
	p.evicts[p.class(victim)][lhdBucket(now-p.last[victim])]++
	i := p.slot[victim]
	last := p.resident[len(p.resident)-1]
	p.resident[i] = last
	p.slot[last] = i
	p.resident = p.resident[:len(p.resident)-1]
	p.slot[victim] = -1
	p.dropLeaf(victim)
	if par := p.parent[victim]; par != nilKey && p.Contains(par) {
		if p.children[par]--; p.children[par] == 0 {
			p.addLeaf(par)
		}
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
