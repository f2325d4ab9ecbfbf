package evictstudy

import "time"

// S3-FIFO's defaults, as libCacheSim's S3FIFO.c
// (1a1a11a/libCacheSim@687f14c6579c62e0fd0db55927e6d0b007937a70):
// a small FIFO of 10% of the store, a ghost of 90% of it in keys, and a
// page moved to the main FIFO when it was used twice in the small one.
const (
	DefaultS3SmallShare = 0.10
	DefaultS3GhostShare = 0.90
	DefaultS3Threshold  = 2
)

// S3FIFO is S3-FIFO (Yang et al., SOSP'23) as libCacheSim implements it:
// new pages enter the small FIFO S, or the main FIFO M when the ghost G
// remembers them. A page leaving S goes to M if it was used at least
// threshold times there, else to G. M is a CLOCK with a two-bit counter:
// a page at its tail that was used since it was last passed goes round
// again with one use less.
type S3FIFO struct {
	cap, smallCap, ghostCap int
	threshold               uint8
	s, m, g                 *list
	freq                    []uint8
	evicted                 bool // until the first eviction, a full S sends new pages to M
	keys                    []Key
}

// NewS3FIFO returns a maker of S3-FIFO stores moving pages from S to M
// after threshold uses.
func NewS3FIFO(threshold int) func(a *Accesses, capacity int) Policy {
	return NewS3FIFOSized(DefaultS3SmallShare, threshold)
}

// NewS3FIFOSized is NewS3FIFO with a small FIFO of smallShare of the
// store.
func NewS3FIFOSized(smallShare float64, threshold int) func(a *Accesses, capacity int) Policy {
	return func(a *Accesses, capacity int) Policy {
		ar := newArena(a.Keys)
		c := max(capacity, 1)
		return &S3FIFO{cap: c, smallCap: min(max(int(smallShare*float64(c)), 1), c),
			ghostCap: max(int(DefaultS3GhostShare*float64(c)), 1), threshold: uint8(max(threshold, 1)),
			s: ar.list(0), m: ar.list(1), g: ar.list(2), freq: make([]uint8, a.Keys)}
	}
}

func (p *S3FIFO) Contains(k Key) bool { return p.s.has(k) || p.m.has(k) }
func (p *S3FIFO) Len() int            { return p.s.n + p.m.n }

func (p *S3FIFO) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		if p.Contains(k) {
			p.freq[k] = min(p.freq[k]+1, 3)
			continue
		}
		ghost := p.g.has(k)
		if ghost {
			p.g.remove(k)
		}
		for p.Len() >= p.cap {
			p.evict()
		}
		p.freq[k] = 0
		switch {
		case ghost, !p.evicted && p.s.n >= p.smallCap:
			p.m.pushFront(k)
		default:
			p.s.pushFront(k)
		}
	}
}

func (p *S3FIFO) evict() {
	p.evicted = true
	if p.m.n > p.cap-p.smallCap || p.s.n == 0 {
		p.evictMain()
		return
	}
	for p.s.n > 0 {
		k := p.s.popBack()
		if p.freq[k] >= p.threshold {
			p.m.pushFront(k)
			continue
		}
		p.g.pushFront(k)
		if p.g.n > p.ghostCap {
			p.g.popBack()
		}
		return
	}
}

func (p *S3FIFO) evictMain() {
	for p.m.n > 0 {
		k := p.m.popBack()
		if p.freq[k] >= 1 {
			p.freq[k]--
			p.m.pushFront(k)
			continue
		}
		return
	}
}
