package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// refL3 is the L3 store's eviction rule written plainly (a slice, most
// recent first, walked from the end on every eviction), to check that the
// store's resumable walk evicts exactly the same pages.
type refL3 struct {
	cap   int
	order []string                 // most recent first
	until map[string]time.Duration // page → latest live pin end
	slots map[string][]string
	ends  map[string]time.Duration // slot → pin end
}

func (r *refL3) touchFront(k string) {
	if i := slices.Index(r.order, k); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
	r.order = append([]string{k}, r.order...)
}

func (r *refL3) put(keys []string, now time.Duration) {
	keys = keys[:min(len(keys), r.cap)]
	held := map[string]bool{}
	for i := len(keys) - 1; i >= 0; i-- {
		if slices.Contains(r.order, keys[i]) {
			r.touchFront(keys[i])
			held[keys[i]] = true
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if slices.Contains(r.order, keys[i]) {
			continue
		}
		for len(r.order) >= r.cap {
			victim := -1
			for j := len(r.order) - 1; j >= 0; j-- {
				if !held[r.order[j]] && r.until[r.order[j]] <= now {
					victim = j
					break
				}
			}
			if victim < 0 {
				for j := len(r.order) - 1; j >= 0; j-- {
					if !held[r.order[j]] {
						victim = j
						break
					}
				}
			}
			delete(r.until, r.order[victim])
			r.order = slices.Delete(r.order, victim, victim+1)
		}
		r.order = append([]string{keys[i]}, r.order...)
		held[keys[i]] = true
	}
	for i := len(keys) - 1; i >= 0; i-- {
		r.touchFront(keys[i])
	}
}

func (r *refL3) pin(slot string, keys []string, ttl, now time.Duration) {
	delete(r.slots, slot)
	delete(r.ends, slot)
	if ttl > 0 {
		var held []string
		for _, k := range keys {
			if slices.Contains(r.order, k) {
				held = append(held, k)
			}
		}
		r.slots[slot], r.ends[slot] = held, now+ttl
	}
	r.until = map[string]time.Duration{}
	for s, ks := range r.slots {
		for _, k := range ks {
			if slices.Contains(r.order, k) {
				r.until[k] = max(r.until[k], r.ends[s])
			}
		}
	}
}

func TestL3EvictsAsThePlainRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
	for c := range 300 {
		capacity := 3 + rng.IntN(6)
		s := NewL3Store(capacity)
		ref := &refL3{cap: capacity, until: map[string]time.Duration{}, slots: map[string][]string{}, ends: map[string]time.Duration{}}
		var now time.Duration
		for step := range 40 {
			now += time.Duration(rng.IntN(3)) * time.Second
			var keys []string
			for range 1 + rng.IntN(capacity) {
				keys = append(keys, fmt.Sprint("k", rng.IntN(2*capacity)))
			}
			keys = slices.Compact(keys)
			switch rng.IntN(3) {
			case 0, 1:
				s.Put(keys, now)
				ref.put(keys, now)
			case 2:
				slot := fmt.Sprint("s", rng.IntN(3))
				ttl := time.Duration(rng.IntN(4)) * time.Second
				s.Pin(slot, keys, ttl, now)
				ref.pin(slot, keys, ttl, now)
			}
			if got := s.Order(); !slices.Equal(got, ref.order) {
				t.Fatalf("case %d step %d: store %v, plain rule %v", c, step, got, ref.order)
			}
		}
	}
}
