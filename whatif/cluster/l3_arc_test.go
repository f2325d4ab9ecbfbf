package cluster_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/cluster"
)

// A hand trace of ARC on two pages (Megiddo and Modha's cases worked by
// hand): a page seen twice goes to T2, a hit on B1's ghost raises T1's
// target, and the replacement then takes T2's page.
func TestL3ARCOrderOnAHandTrace(t *testing.T) {
	s := cluster.NewL3StoreARC(2)
	step := func(at int, key string, t1, t2 []string, target float64) {
		t.Helper()
		s.Put([]string{key}, time.Duration(at)*time.Second)
		g1, g2, p := s.ARCOrder()
		if !slices.Equal(g1, t1) || !slices.Equal(g2, t2) || p != target {
			t.Fatalf("after %s at %ds: T1 %v T2 %v p %v, want T1 %v T2 %v p %v", key, at, g1, g2, p, t1, t2, target)
		}
	}
	step(0, "a", []string{"a"}, nil, 0)
	step(1, "b", []string{"b", "a"}, nil, 0)
	step(2, "a", []string{"b"}, []string{"a"}, 0) // seen twice: T2
	step(3, "c", []string{"c"}, []string{"a"}, 0) // T1 over p = 0: b to B1
	step(4, "b", []string{"c"}, []string{"b"}, 1) // B1 hit: p 1, T1 at p: a (T2) to B2
	step(5, "d", []string{"d", "c"}, nil, 1)      // T1 at p: b (T2) to B2
	if s.Contains("a") || s.Contains("b") || s.Stats().Evictions != 3 {
		t.Fatalf("order %v, stats %+v", s.Order(), s.Stats())
	}
	// LRU on the same trace keeps d and b.
	l := cluster.NewL3Store(2)
	for i, k := range []string{"a", "b", "a", "c", "b", "d"} {
		l.Put([]string{k}, time.Duration(i)*time.Second)
	}
	if got := l.Order(); !slices.Equal(got, []string{"d", "b"}) {
		t.Fatalf("LRU order %v", got)
	}
}

// ARC skips pinned pages as LRU does: with T1 the whole store its oldest
// page goes, unless pinned; then the next oldest.
func TestL3ARCSkipsPinnedPages(t *testing.T) {
	s := cluster.NewL3StoreARC(2)
	s.Put([]string{"a"}, 0)
	s.Put([]string{"b"}, time.Second)
	s.Pin("slot", []string{"a"}, time.Minute, time.Second)
	s.Put([]string{"c"}, 2*time.Second)
	if !s.Contains("a") || s.Contains("b") || !s.Contains("c") || s.Stats().PinsBroken != 0 {
		t.Fatalf("order %v stats %+v: the pinned page must stay", s.Order(), s.Stats())
	}
	// Its pin lapsed, a goes next.
	s.Put([]string{"d"}, 2*time.Minute)
	if s.Contains("a") || !s.Contains("c") || !s.Contains("d") {
		t.Fatalf("order %v: the lapsed pin protects nothing", s.Order())
	}
}

// Without pins, the store in ARC order written through with Put holds
// what a plain ARC (refARC, Megiddo and Modha's algorithm as the eviction
// study played it, docs/eviction-study.md) holds, request by request, on
// random traces.
func TestL3ARCMatchesAPlainARC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		const keys = 24
		capacity := 1 + rng.IntN(10)
		arc := &refARC{c: capacity}
		store := cluster.NewL3StoreARC(capacity)
		for i := range 60 {
			at := time.Duration(i) * time.Second
			req := rng.Perm(keys)[:1+rng.IntN(6)]
			ks := make([]string, len(req))
			for j, k := range req {
				ks[j] = strconv.Itoa(k)
			}
			arc.write(req)
			store.Put(ks, at)
			for k := range keys {
				if arc.contains(k) != store.Contains(strconv.Itoa(k)) {
					t.Fatalf("trial %d, request %d (capacity %d): page %d resident in one store only", trial, i, capacity, k)
				}
			}
		}
		if n := len(arc.t1) + len(arc.t2); n != store.Len() {
			t.Fatalf("trial %d: plain ARC holds %d pages, store %d", trial, n, store.Len())
		}
	}
}

// refARC is the Adaptive Replacement Cache on plain slices, most recent
// first: T1 holds pages seen once recently, T2 pages seen at least twice,
// the ghosts B1 and B2 what each evicted; a hit on a ghost moves T1's
// target p toward the side that would have hit.
type refARC struct {
	c              int
	p              float64
	t1, t2, b1, b2 []int
}

func (a *refARC) contains(k int) bool { return slices.Contains(a.t1, k) || slices.Contains(a.t2, k) }

// write takes a request's write-through as the store does: its resident
// pages, then the rest, each from the prompt's tail to its head.
func (a *refARC) write(keys []int) {
	var order []int
	for _, resident := range []bool{true, false} {
		for i := len(keys) - 1; i >= 0; i-- {
			if a.contains(keys[i]) == resident {
				order = append(order, keys[i])
			}
		}
	}
	for _, k := range order {
		a.access(k)
	}
}

func (a *refARC) access(x int) {
	c := float64(a.c)
	switch {
	case slices.Contains(a.t1, x):
		a.t1 = without(a.t1, x)
		a.t2 = slices.Insert(a.t2, 0, x)
	case slices.Contains(a.t2, x):
		a.t2 = slices.Insert(without(a.t2, x), 0, x)
	case slices.Contains(a.b1, x):
		a.p = min(c, a.p+max(float64(len(a.b2))/float64(len(a.b1)), 1))
		a.replace(false)
		a.b1 = without(a.b1, x)
		a.t2 = slices.Insert(a.t2, 0, x)
	case slices.Contains(a.b2, x):
		a.p = max(0, a.p-max(float64(len(a.b1))/float64(len(a.b2)), 1))
		a.replace(true)
		a.b2 = without(a.b2, x)
		a.t2 = slices.Insert(a.t2, 0, x)
	default:
		l1 := len(a.t1) + len(a.b1)
		total := l1 + len(a.t2) + len(a.b2)
		switch {
		case l1 >= a.c:
			if len(a.t1) < a.c {
				a.b1 = a.b1[:len(a.b1)-1]
				a.replace(false)
			} else {
				a.t1 = a.t1[:len(a.t1)-1]
			}
		case total >= a.c:
			if total >= 2*a.c {
				a.b2 = a.b2[:len(a.b2)-1]
			}
			a.replace(false)
		}
		a.t1 = slices.Insert(a.t1, 0, x)
	}
}

// replace moves one page to a ghost list when the store is full: from T1
// if it is over its target p, else from T2.
func (a *refARC) replace(inB2 bool) {
	if len(a.t1)+len(a.t2) < a.c {
		return
	}
	if n := len(a.t1); n > 0 && (float64(n) > a.p || (inB2 && float64(n) == a.p) || len(a.t2) == 0) {
		a.b1 = slices.Insert(a.b1, 0, a.t1[n-1])
		a.t1 = a.t1[:n-1]
		return
	}
	n := len(a.t2)
	a.b2 = slices.Insert(a.b2, 0, a.t2[n-1])
	a.t2 = a.t2[:n-1]
}

func without(s []int, x int) []int { return slices.DeleteFunc(s, func(k int) bool { return k == x }) }
