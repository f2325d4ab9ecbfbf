package evictstudy

import "time"

// LRU is sim.L3Store without pins: a write-through makes the prompt's
// pages the most recent, its first page most of all, evicting the least
// recently used pages.
type LRU struct {
	cap  int
	q    *list
	keys []Key
}

// NewLRU returns an empty LRU store of capacity pages.
func NewLRU(a *Accesses, capacity int) Policy {
	return &LRU{cap: max(capacity, 1), q: newArena(a.Keys).list(0)}
}

func (p *LRU) Contains(k Key) bool { return p.q.has(k) }
func (p *LRU) Len() int            { return p.q.n }

func (p *LRU) Write(_ time.Duration, keys []Key) {
	keys = keys[:min(len(keys), p.cap)] // as sim.L3Store.Put
	p.keys = hitsFirst(p.keys, keys, p.q.has)
	for _, k := range p.keys {
		if p.q.has(k) {
			p.q.moveFront(k)
			continue
		}
		if p.q.n >= p.cap {
			p.q.popBack()
		}
		p.q.pushFront(k)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if p.q.has(keys[i]) {
			p.q.moveFront(keys[i])
		}
	}
}
