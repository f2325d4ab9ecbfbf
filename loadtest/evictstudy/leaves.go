package evictstudy

import (
	"math"
	"math/rand/v2"
	"time"
)

// leafStore is a store closed under prefixes that evicts by sampling:
// only a page no resident page continues (a leaf of the store's prefix
// tree) may go, since an inner page's loss would waste the pages after
// it, and of samples leaves drawn at random the one of lowest value goes.
// New pages go in in prompt order, so each one's parent is resident and
// none of its children.
type leafStore struct {
	cap      int
	last     []time.Duration // every page's last use
	slot     []int32         // index in resident, or -1
	resident []Key
	parent   []Key
	children []int32 // resident pages continuing each page
	leafSlot []int32 // index in leaves, or -1
	leaves   []Key
	rng      *rand.Rand
	samples  int
}

func newLeafStore(a *Accesses, capacity, samples int) *leafStore {
	s := &leafStore{cap: max(capacity, 1), last: make([]time.Duration, a.Keys), slot: make([]int32, a.Keys),
		parent: a.Parent, children: make([]int32, a.Keys), leafSlot: make([]int32, a.Keys),
		rng: rand.New(rand.NewPCG(1, 2)), samples: samples}
	for i := range s.slot {
		s.slot[i], s.leafSlot[i] = -1, -1
	}
	return s
}

func (s *leafStore) Contains(k Key) bool { return s.slot[k] >= 0 }
func (s *leafStore) Len() int            { return len(s.resident) }

// write stores keys' new pages at now (their uses already marked in
// last), evicting the leaf of lowest value for each one that needs room;
// evicted, if set, hears of each eviction first.
func (s *leafStore) write(now time.Duration, keys []Key, value func(Key) float64, evicted func(Key)) {
	for _, k := range keys {
		if s.Contains(k) {
			continue
		}
		if len(s.resident) >= s.cap {
			v := s.victim(now, value)
			if evicted != nil {
				evicted(v)
			}
			s.remove(v)
		}
		s.slot[k] = int32(len(s.resident))
		s.resident = append(s.resident, k)
		s.addLeaf(k)
		if par := s.parent[k]; par != nilKey && s.Contains(par) {
			if s.children[par]++; s.children[par] == 1 {
				s.dropLeaf(par)
			}
		}
	}
}

func (s *leafStore) victim(now time.Duration, value func(Key) float64) Key {
	victim, worst := nilKey, math.Inf(1)
	for range min(s.samples, len(s.leaves)) {
		k := s.leaves[s.rng.IntN(len(s.leaves))]
		if s.last[k] == now {
			continue // this request's
		}
		if v := value(k); v < worst {
			victim, worst = k, v
		}
	}
	if victim == nilKey {
		victim = s.leaves[s.rng.IntN(len(s.leaves))]
	}
	return victim
}

func (s *leafStore) remove(k Key) {
	i := s.slot[k]
	last := s.resident[len(s.resident)-1]
	s.resident[i] = last
	s.slot[last] = i
	s.resident = s.resident[:len(s.resident)-1]
	s.slot[k] = -1
	s.dropLeaf(k)
	if par := s.parent[k]; par != nilKey && s.Contains(par) {
		if s.children[par]--; s.children[par] == 0 {
			s.addLeaf(par)
		}
	}
}

func (s *leafStore) addLeaf(k Key) {
	s.leafSlot[k] = int32(len(s.leaves))
	s.leaves = append(s.leaves, k)
}

func (s *leafStore) dropLeaf(k Key) {
	i := s.leafSlot[k]
	last := s.leaves[len(s.leaves)-1]
	s.leaves[i] = last
	s.leafSlot[last] = i
	s.leaves = s.leaves[:len(s.leaves)-1]
	s.leafSlot[k] = -1
}
