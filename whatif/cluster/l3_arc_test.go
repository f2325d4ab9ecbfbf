package cluster_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/loadtest/evictstudy"
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
// what the eviction study's ARC holds, request by request, on random
// traces: it is the study's policy.
func TestL3ARCMatchesTheStudy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		const keys = 24
		capacity := 1 + rng.IntN(10)
		a := &evictstudy.Accesses{BlockSize: 4, Keys: keys}
		for i := range 60 {
			perm := rng.Perm(keys)[:1+rng.IntN(6)]
			ks := make([]evictstudy.Key, len(perm))
			for j, k := range perm {
				ks[j] = evictstudy.Key(k)
			}
			a.List = append(a.List, evictstudy.Access{At: time.Duration(i) * time.Second, Keys: ks, Request: i, Next: -1})
		}
		arc := evictstudy.NewARC(a, capacity)
		store := cluster.NewL3StoreARC(capacity)
		for i, acc := range a.List {
			ks := make([]string, len(acc.Keys))
			for j, k := range acc.Keys {
				ks[j] = strconv.Itoa(int(k))
			}
			arc.Write(acc.At, acc.Keys)
			store.Put(ks, acc.At)
			for k := range keys {
				if arc.Contains(evictstudy.Key(k)) != store.Contains(strconv.Itoa(k)) {
					t.Fatalf("trial %d, request %d (capacity %d): page %d resident in one store only", trial, i, capacity, k)
				}
			}
		}
		if arc.Len() != store.Len() {
			t.Fatalf("trial %d: study holds %d pages, store %d", trial, arc.Len(), store.Len())
		}
	}
}
