package cluster

import "time"

// The L3 store in ARC order (Eviction EvictARC): the Adaptive Replacement
// Cache of Megiddo and Modha (FAST '03), the best online order of the
// eviction study (docs/eviction-study.md), with Mooncake's soft
// pins on top: a page under a live pin is skipped when ARC picks its
// victim, as the LRU order skips it, and only when every page of both
// lists is pinned does a pinned one go (a broken pin).
//
// T1 holds pages seen once recently, T2 pages seen at least twice; the
// ghost lists B1 and B2 remember the keys each evicted, and a hit on a
// ghost moves T1's target size p toward the side that would have hit.
// A request's write-through (Put) accesses its resident pages first and
// then its new ones, each from the prompt's tail to its head, as the
// study played it; Touch (a load from L3) accesses the resident pages
// it names, and a Put at the same instant does not access them again
// (Serve touches what it loaded, then writes the whole prompt through:
// one request, one access a page).

// Eviction orders of the L3 store.
const (
	EvictLRU = "lru" // the default: least recently used, pinned pages last
	EvictARC = "arc"
)

// arcState is ARC's lists. The resident lists link the store's pages
// through their prev and next; the ghosts are keys alone.
type arcState struct {
	p      float64
	t1, t2 plist
	b1, b2 glist
	ghosts map[string]*ghost
	// putNo numbers the Puts: a page Touch accessed at the instant of
	// Put number putNo+1 is not accessed again by it.
	putNo uint64
	// scan[id] is where the next victim walk of T1 (id 1) or T2 (id 2)
	// resumes within Put number scanGen: everything between the list's
	// tail and it is pinned and still is (within one Put pins and time
	// do not change, and pages move only to the fronts), so a Put of k
	// pages walks past the pinned tail once, not k times, as the LRU
	// order's walk does.
	scan    [3]*page
	scanned [3]bool
	scanGen uint64
	misses  []string // Put's scratch
}

// plist is a list of resident pages, most recent at head.
type plist struct {
	head, tail *page
	n          int
	id         uint8
}

type ghost struct {
	key        string
	prev, next *ghost
	in         uint8 // 1: B1, 2: B2
}

type glist struct {
	head, tail *ghost
	n          int
}

// NewL3StoreARC returns an empty store of capacity pages in ARC order.
func NewL3StoreARC(capacity int) *L3Store {
	s := NewL3Store(capacity)
	s.arc = &arcState{t1: plist{id: 1}, t2: plist{id: 2}, ghosts: map[string]*ghost{}}
	return s
}

func (l *plist) pushFront(p *page) {
	p.prev, p.next, p.list = nil, l.head, l.id
	if l.head != nil {
		l.head.prev = p
	}
	l.head = p
	if l.tail == nil {
		l.tail = p
	}
	l.n++
}

func (l *plist) unlink(p *page) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		l.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.tail = p.prev
	}
	p.prev, p.next, p.list = nil, nil, 0
	l.n--
}

func (g *glist) pushFront(x *ghost) {
	x.prev, x.next = nil, g.head
	if g.head != nil {
		g.head.prev = x
	}
	g.head = x
	if g.tail == nil {
		g.tail = x
	}
	g.n++
}

func (g *glist) unlink(x *ghost) {
	if x.prev != nil {
		x.prev.next = x.next
	} else {
		g.head = x.next
	}
	if x.next != nil {
		x.next.prev = x.prev
	} else {
		g.tail = x.prev
	}
	x.prev, x.next = nil, nil
	g.n--
}

func (a *arcState) list(id uint8) *plist {
	if id == 1 {
		return &a.t1
	}
	return &a.t2
}

func (a *arcState) ghostList(in uint8) *glist {
	if in == 1 {
		return &a.b1
	}
	return &a.b2
}

// dropGhost forgets the oldest key of B1 (in 1) or B2 (in 2).
func (a *arcState) dropGhost(in uint8) {
	g := a.ghostList(in)
	if x := g.tail; x != nil {
		g.unlink(x)
		delete(a.ghosts, x.key)
	}
}

// arcTouch is Touch in ARC order.
func (s *L3Store) arcTouch(keys []string, now time.Duration) {
	a := s.arc
	for i := len(keys) - 1; i >= 0; i-- {
		if p, ok := s.m[keys[i]]; ok {
			if p.touchedAt == now && p.touchNo == a.putNo+1 {
				continue
			}
			s.arcHit(p)
			p.touchedAt, p.touchNo = now, a.putNo+1
		}
	}
}

// arcHit moves a resident page to T2's front.
func (s *L3Store) arcHit(p *page) {
	a := s.arc
	a.list(p.list).unlink(p)
	a.t2.pushFront(p)
}

// arcPut is Put in ARC order.
func (s *L3Store) arcPut(keys []string, now time.Duration) int {
	a := s.arc
	a.putNo++
	// Which keys are misses is settled before any access, as the study
	// does: a hit that a miss then evicts is not written again.
	a.misses = a.misses[:0]
	for i := len(keys) - 1; i >= 0; i-- {
		p, ok := s.m[keys[i]]
		switch {
		case !ok:
			a.misses = append(a.misses, keys[i])
		case p.touchedAt == now && p.touchNo == a.putNo:
			// this request's Touch accessed it
		default:
			s.arcHit(p)
		}
	}
	inserted := 0
	for _, k := range a.misses {
		s.arcMiss(k, now)
		inserted++
	}
	s.stats.Inserts += int64(inserted)
	return inserted
}

// arcMiss inserts key, not resident, as ARC's access of a miss does.
func (s *L3Store) arcMiss(key string, now time.Duration) {
	a := s.arc
	c := float64(s.cap)
	p := &page{key: key}
	if x, ok := a.ghosts[key]; ok {
		if x.in == 1 {
			a.p = min(c, a.p+max(float64(a.b2.n)/float64(a.b1.n), 1))
			s.arcReplace(false, now)
		} else {
			a.p = max(0, a.p-max(float64(a.b1.n)/float64(a.b2.n), 1))
			s.arcReplace(true, now)
		}
		a.ghostList(x.in).unlink(x)
		delete(a.ghosts, key)
		s.m[key] = p
		a.t2.pushFront(p)
		return
	}
	l1 := a.t1.n + a.b1.n
	total := l1 + a.t2.n + a.b2.n
	switch {
	case l1 >= s.cap:
		if a.t1.n < s.cap {
			a.dropGhost(1)
			s.arcReplace(false, now)
		} else {
			// T1 is the whole store: its oldest page goes, remembered
			// nowhere (ARC's case I with B1 empty).
			s.remove(s.arcVictim(1, now), now)
		}
	case total >= s.cap:
		if total >= 2*s.cap {
			a.dropGhost(2)
		}
		s.arcReplace(false, now)
	}
	s.m[key] = p
	a.t1.pushFront(p)
}

// arcReplace evicts one page into its ghost list when the store is full:
// from T1 if it is over its target p, else from T2 (ARC's REPLACE).
func (s *L3Store) arcReplace(inB2 bool, now time.Duration) {
	a := s.arc
	if a.t1.n+a.t2.n < s.cap {
		return
	}
	from := uint8(2)
	if a.t1.n > 0 && (float64(a.t1.n) > a.p || (inB2 && float64(a.t1.n) == a.p) || a.t2.n == 0) {
		from = 1
	}
	p := s.arcVictim(from, now)
	in := p.list
	s.remove(p, now)
	x := &ghost{key: p.key, in: in}
	a.ghosts[p.key] = x
	a.ghostList(in).pushFront(x)
}

// arcVictim is the page ARC evicts from list from: its least recent page
// without a live pin, else the other list's, else (every page pinned) the
// least recent pinned page of from, or of the other list if from is
// empty.
func (s *L3Store) arcVictim(from uint8, now time.Duration) *page {
	a := s.arc
	if a.scanGen != a.putNo {
		a.scanGen, a.scanned = a.putNo, [3]bool{}
	}
	other := 3 - from
	for _, id := range []uint8{from, other} {
		start := a.list(id).tail
		if a.scanned[id] {
			start = a.scan[id]
		}
		for p := start; p != nil; p = p.prev {
			if p.until <= now {
				// Resumed from only when pinned pages were skipped,
				// and not from the list's end: pages this Put adds go
				// to the front, where a walk from nil would miss them.
				a.scan[id], a.scanned[id] = p.prev, p != a.list(id).tail && p.prev != nil
				return p
			}
		}
		// Nothing evictable: not cached, as pages this Put adds to the
		// front are candidates the next walk must see.
		a.scanned[id] = false
	}
	// Every page pinned (rare): the walks' resume points may be the page
	// that goes now.
	a.scanned = [3]bool{}
	if p := a.list(from).tail; p != nil {
		return p
	}
	return a.list(other).tail
}

// arcOrder is the resident keys, T1 most recent first, then T2.
func (s *L3Store) arcOrder() (t1, t2 []string) {
	for p := s.arc.t1.head; p != nil; p = p.next {
		t1 = append(t1, p.key)
	}
	for p := s.arc.t2.head; p != nil; p = p.next {
		t2 = append(t2, p.key)
	}
	return t1, t2
}

// ARCOrder returns the resident keys of T1 and of T2, most recent first,
// and ARC's target size of T1 (for tests; nil, nil, 0 in LRU order).
func (s *L3Store) ARCOrder() (t1, t2 []string, target float64) {
	if s.arc == nil {
		return nil, nil, 0
	}
	t1, t2 = s.arcOrder()
	return t1, t2, s.arc.p
}
