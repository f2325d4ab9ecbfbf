package evictstudy

import (
	"math"
	"time"
)

// LFUDecay evicts the page with the least decayed use count: each use
// adds 1 and counts halve every half-life, so a short half-life tends to
// LRU and a long one to LFU. A new page is always stored.
type LFUDecay struct {
	cap   int
	tau   float64 // seconds: half-life ÷ ln 2
	score []float64
	depth []int32
	h     *worstHeap
	keys  []Key
}

// NewLFUDecay returns a maker of LFU stores whose counts halve every
// halfLife.
func NewLFUDecay(halfLife time.Duration) func(a *Accesses, capacity int) Policy {
	return func(a *Accesses, capacity int) Policy {
		p := &LFUDecay{cap: max(capacity, 1), tau: halfLife.Seconds() / math.Ln2, score: make([]float64, a.Keys), depth: a.Depth}
		// score is log of the count scaled by e^(now/τ), so scores of
		// different pages compare at any common now.
		p.h = newWorstHeap(a.Keys, func(x, y Key) bool {
			if p.score[x] != p.score[y] {
				return p.score[x] < p.score[y]
			}
			if p.depth[x] != p.depth[y] {
				return p.depth[x] > p.depth[y]
			}
			return x > y
		})
		return p
	}
}

func (p *LFUDecay) Contains(k Key) bool { return p.h.has(k) }
func (p *LFUDecay) Len() int            { return p.h.len() }

func (p *LFUDecay) Write(now time.Duration, keys []Key) {
	s := now.Seconds() / p.tau
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		if p.h.has(k) {
			p.score[k] = logAddExp(p.score[k], s)
			p.h.fix(k)
			continue
		}
		if p.h.len() >= p.cap {
			p.h.pop()
		}
		p.score[k] = s
		p.h.push(k)
	}
}

func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}
