package evictstudy

import "time"

// ARC is the Adaptive Replacement Cache (Megiddo and Modha, FAST'03):
// T1 holds pages seen once recently, T2 pages seen at least twice; the
// ghosts B1 and B2 remember what each evicted, and a hit on a ghost moves
// the target size p of T1 toward the side that would have hit.
type ARC struct {
	c              int
	p              float64
	t1, t2, b1, b2 *list
	keys           []Key
}

// NewARC returns an empty ARC store of capacity pages.
func NewARC(a *Accesses, capacity int) Policy {
	ar := newArena(a.Keys)
	return &ARC{c: max(capacity, 1), t1: ar.list(0), t2: ar.list(1), b1: ar.list(2), b2: ar.list(3)}
}

func (p *ARC) Contains(k Key) bool { return p.t1.has(k) || p.t2.has(k) }
func (p *ARC) Len() int            { return p.t1.n + p.t2.n }

func (p *ARC) Write(_ time.Duration, keys []Key) {
	p.keys = hitsFirst(p.keys, keys, p.Contains)
	for _, k := range p.keys {
		p.access(k)
	}
}

func (p *ARC) access(x Key) {
	c := float64(p.c)
	switch {
	case p.t1.has(x):
		p.t1.remove(x)
		p.t2.pushFront(x)
	case p.t2.has(x):
		p.t2.moveFront(x)
	case p.b1.has(x):
		p.p = min(c, p.p+max(float64(p.b2.n)/float64(p.b1.n), 1))
		p.replace(false)
		p.b1.remove(x)
		p.t2.pushFront(x)
	case p.b2.has(x):
		p.p = max(0, p.p-max(float64(p.b1.n)/float64(p.b2.n), 1))
		p.replace(true)
		p.b2.remove(x)
		p.t2.pushFront(x)
	default:
		l1 := p.t1.n + p.b1.n
		total := l1 + p.t2.n + p.b2.n
		switch {
		case l1 >= p.c:
			if p.t1.n < p.c {
				p.b1.popBack()
				p.replace(false)
			} else {
				p.t1.popBack()
			}
		case total >= p.c:
			if total >= 2*p.c {
				p.b2.popBack()
			}
			p.replace(false)
		}
		p.t1.pushFront(x)
	}
}

// replace evicts one page to a ghost list when the store is full: from
// T1 if it is over its target p, else from T2.
func (p *ARC) replace(inB2 bool) {
	if p.t1.n+p.t2.n < p.c {
		return
	}
	if p.t1.n > 0 && (float64(p.t1.n) > p.p || (inB2 && float64(p.t1.n) == p.p) || p.t2.n == 0) {
		p.b1.pushFront(p.t1.popBack())
		return
	}
	p.b2.pushFront(p.t2.popBack())
}
