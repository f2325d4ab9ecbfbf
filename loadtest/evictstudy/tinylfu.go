package evictstudy

import "time"

// sketch is TinyLFU's count-min sketch (Einziger et al., ACM ToS 2017):
// four rows of saturating 4-bit counts, all halved once the additions
// reach ten times the store's size, so it estimates recent frequency.
type sketch struct {
	rows    [4][]uint8
	mask    uint32
	adds    int
	resetAt int
}

func newSketch(capacity int) *sketch {
	w := 16
	for w < capacity {
		w <<= 1
	}
	s := &sketch{mask: uint32(w - 1), resetAt: 10 * max(capacity, 1)}
	for i := range s.rows {
		s.rows[i] = make([]uint8, w)
	}
	return s
}

var sketchSeeds = [4]uint32{0x9e3779b9, 0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f}

func (s *sketch) index(k Key, row int) uint32 {
	h := uint32(k)*sketchSeeds[row] + uint32(row)
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	return h & s.mask
}

func (s *sketch) add(k Key) {
	for r := range s.rows {
		if c := &s.rows[r][s.index(k, r)]; *c < 15 {
			*c++
		}
	}
	if s.adds++; s.adds >= s.resetAt {
		s.adds /= 2
		for r := range s.rows {
			for i := range s.rows[r] {
				s.rows[r][i] >>= 1
			}
		}
	}
}

func (s *sketch) estimate(k Key) uint8 {
	e := uint8(15)
	for r := range s.rows {
		e = min(e, s.rows[r][s.index(k, r)])
	}
	return e
}

// TinyLFU is LRU behind TinyLFU's admission: when the store is full, a
// new page is stored only if the sketch has seen it more often than the
// page LRU would evict; otherwise the write is turned away.
type TinyLFU struct {
	cap  int
	q    *list
	f    *sketch
	keys []Key
}

// NewTinyLFU returns an empty LRU store with TinyLFU admission.
func NewTinyLFU(a *Accesses, capacity int) Policy {
	c := max(capacity, 1)
	return &TinyLFU{cap: c, q: newArena(a.Keys).list(0), f: newSketch(c)}
}

func (p *TinyLFU) Contains(k Key) bool { return p.q.has(k) }
func (p *TinyLFU) Len() int            { return p.q.n }

func (p *TinyLFU) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.q.has)
	for _, k := range p.keys {
		p.f.add(k)
		switch {
		case p.q.has(k):
			p.q.moveFront(k)
		case p.q.n < p.cap:
			p.q.pushFront(k)
		case p.f.estimate(k) > p.f.estimate(p.q.tail):
			p.q.popBack()
			p.q.pushFront(k)
		}
	}
}

// DefaultWindowShare is W-TinyLFU's window, as in Caffeine: 1% of the
// store.
const DefaultWindowShare = 0.01

// WTinyLFU is W-TinyLFU (Caffeine's policy): new pages enter a small LRU
// window; a page the window pushes out enters the main SLRU's probation
// segment only if the sketch has seen it more often than the page the
// main store would evict.
type WTinyLFU struct {
	winCap, mainCap, protCap int
	win, prob, prot          *list
	f                        *sketch
	keys                     []Key
}

// NewWTinyLFU returns an empty W-TinyLFU store of capacity pages.
func NewWTinyLFU(a *Accesses, capacity int) Policy {
	ar := newArena(a.Keys)
	c := max(capacity, 1)
	win := max(int(DefaultWindowShare*float64(c)), 1)
	main := c - win
	return &WTinyLFU{winCap: win, mainCap: main, protCap: max(int(DefaultProtectedShare*float64(main)), 1),
		win: ar.list(0), prob: ar.list(1), prot: ar.list(2), f: newSketch(c)}
}

func (p *WTinyLFU) Contains(k Key) bool { return p.win.has(k) || p.prob.has(k) || p.prot.has(k) }
func (p *WTinyLFU) Len() int            { return p.win.n + p.prob.n + p.prot.n }

func (p *WTinyLFU) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		p.f.add(k)
		switch {
		case p.win.has(k):
			p.win.moveFront(k)
		case p.prot.has(k):
			p.prot.moveFront(k)
		case p.prob.has(k):
			promote(p.prob, p.prot, p.protCap, k)
		default:
			p.win.pushFront(k)
			if p.win.n > p.winCap {
				p.admit(p.win.popBack())
			}
		}
	}
}

// admit offers a page pushed out of the window to the main store.
func (p *WTinyLFU) admit(c Key) {
	if p.mainCap == 0 {
		return
	}
	if p.prob.n+p.prot.n < p.mainCap {
		p.prob.pushFront(c)
		return
	}
	victims := p.prob
	if victims.n == 0 {
		victims = p.prot
	}
	if p.f.estimate(c) > p.f.estimate(victims.tail) {
		victims.popBack()
		p.prob.pushFront(c)
	}
}
