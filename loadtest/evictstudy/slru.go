package evictstudy

import "time"

// DefaultProtectedShare is the share of an SLRU store held by its
// protected segment (as in Caffeine's and libCacheSim's SLRU).
const DefaultProtectedShare = 0.8

// SLRU is segmented LRU: a page enters a probation segment and moves to
// the protected one when it is used again there; protected pages pushed
// out of their segment go back to probation, and eviction takes
// probation's least recent page first.
type SLRU struct {
	cap, protCap int
	prob, prot   *list
	keys         []Key
}

// NewSLRU returns an empty SLRU store of capacity pages.
func NewSLRU(a *Accesses, capacity int) Policy {
	return NewSLRUSized(DefaultProtectedShare)(a, capacity)
}

// NewSLRUSized returns a maker of SLRU stores whose protected segment
// holds share of the store.
func NewSLRUSized(share float64) func(a *Accesses, capacity int) Policy {
	return func(a *Accesses, capacity int) Policy {
		ar := newArena(a.Keys)
		c := max(capacity, 1)
		return &SLRU{cap: c, protCap: max(int(share*float64(c)), 1), prob: ar.list(0), prot: ar.list(1)}
	}
}

func (p *SLRU) Contains(k Key) bool { return p.prob.has(k) || p.prot.has(k) }
func (p *SLRU) Len() int            { return p.prob.n + p.prot.n }

func (p *SLRU) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		switch {
		case p.prot.has(k):
			p.prot.moveFront(k)
		case p.prob.has(k):
			promote(p.prob, p.prot, p.protCap, k)
		default:
			if p.Len() >= p.cap {
				if p.prob.n > 0 {
					p.prob.popBack()
				} else {
					p.prot.popBack()
				}
			}
			p.prob.pushFront(k)
		}
	}
}

// TwoQ is the full 2Q (Johnson and Shasha, VLDB'94): new pages enter a
// FIFO A1in (a quarter of the store); pages it pushes out are remembered
// in a ghost A1out (half the store's size in keys), and a page found
// there goes to the LRU Am, which holds the rest.
type TwoQ struct {
	cap, kin, kout int
	in, out, am    *list
	keys           []Key
}

// NewTwoQ returns an empty 2Q store of capacity pages.
func NewTwoQ(a *Accesses, capacity int) Policy {
	ar := newArena(a.Keys)
	c := max(capacity, 1)
	return &TwoQ{cap: c, kin: max(c/4, 1), kout: max(c/2, 1), in: ar.list(0), out: ar.list(1), am: ar.list(2)}
}

func (p *TwoQ) Contains(k Key) bool { return p.in.has(k) || p.am.has(k) }
func (p *TwoQ) Len() int            { return p.in.n + p.am.n }

func (p *TwoQ) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		switch {
		case p.am.has(k):
			p.am.moveFront(k)
		case p.in.has(k):
			// A1in is a FIFO: a reuse there does not move the page.
		case p.out.has(k):
			p.out.remove(k)
			p.reclaim()
			p.am.pushFront(k)
		default:
			p.reclaim()
			p.in.pushFront(k)
		}
	}
}

func (p *TwoQ) reclaim() {
	if p.Len() < p.cap {
		return
	}
	if p.in.n > p.kin || p.am.n == 0 {
		p.out.pushFront(p.in.popBack())
		if p.out.n > p.kout {
			p.out.popBack()
		}
		return
	}
	p.am.popBack()
}

// promote moves k, a reuse in the probationary segment, to the front of
// the protected one; the protected segment's least recent page goes back
// to probation's front when it overflows protCap (SLRU, and W-TinyLFU's
// main segment).
func promote(prob, prot *list, protCap int, k Key) {
	prob.remove(k)
	prot.pushFront(k)
	if prot.n > protCap {
		prob.pushFront(prot.popBack())
	}
}
