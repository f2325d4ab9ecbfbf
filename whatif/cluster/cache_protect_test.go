package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestDeviceCacheProtectKeepsBlocksUntilTheyExpire(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2})
	if n := c.Protect([]uint64{1, 2, 3}, 10*time.Second); n != 2 {
		t.Fatalf("protected %d, want the 2 resident leading blocks", n)
	}
	c.Admit([]uint64{5, 6}) // full: 5 6 unprotected, 1 2 protected
	c.Expire(time.Second)
	a := c.Admit([]uint64{7, 8})
	if !slices.Equal(a.Evicted, []uint64{6, 5}) {
		t.Fatalf("evicted %v, want the unprotected 6 5 before the older protected 1 2", a.Evicted)
	}
	// Only protected blocks besides the new prompt: the oldest protected
	// go, leaf first.
	a = c.Admit([]uint64{7, 8, 9})
	if !slices.Equal(a.Evicted, []uint64{2}) || c.Prefix([]uint64{1, 2}) != 1 {
		t.Fatalf("evicted %v: with nothing unprotected the protected leaf goes first", a.Evicted)
	}
	// Expired: back to the least recent end.
	c.Protect([]uint64{1}, 10*time.Second)
	c.Admit([]uint64{11})
	c.Expire(10 * time.Second)
	a = c.Admit([]uint64{12})
	if !slices.Equal(a.Evicted, []uint64{1}) {
		t.Fatalf("evicted %v, want the expired 1 first", a.Evicted)
	}
}

func TestDeviceCacheAdmitNeverEvictsItsOwnProtectedBlocks(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2})
	c.Protect([]uint64{1, 2}, time.Minute)
	c.Admit([]uint64{3, 4})
	c.Protect([]uint64{3, 4}, time.Minute)
	// Everything else is protected: admitting 1 2 5 must evict 4 (the
	// other prompt's leaf), never 1 or 2.
	a := c.Admit([]uint64{1, 2, 5})
	if a.Hit != 2 || !slices.Equal(a.Evicted, []uint64{4}) || !c.Contains(1) || !c.Contains(2) {
		t.Fatalf("admission %+v, order %v", a, c.Order())
	}
}

// Under random admissions, holds, protections and expiries the cache
// keeps its invariants: at most Cap blocks, every block on exactly one
// list or held, and what it holds of any admitted prompt a prefix.
func TestDeviceCacheProtectKeepsPrefixesUnderRandomUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := NewDeviceCache(16)
	prompts := make([][]uint64, 12)
	for i := range prompts {
		// Prompts share a 4-block prefix, as conversations share a system
		// prompt; block ids encode (prompt, position).
		n := 4 + rng.IntN(16)
		for j := range n {
			if j < 4 {
				prompts[i] = append(prompts[i], uint64(j+1))
			} else {
				prompts[i] = append(prompts[i], uint64(1000*(i+1)+j))
			}
		}
	}
	var held [][]uint64
	now := time.Duration(0)
	for step := range 5000 {
		now += time.Duration(rng.IntN(1000)) * time.Millisecond
		c.Expire(now)
		p := prompts[rng.IntN(len(prompts))]
		switch rng.IntN(4) {
		case 0:
			c.Admit(p)
		case 1:
			c.Protect(p, now+time.Duration(rng.IntN(120))*time.Second)
		case 2:
			c.Admit(p)
			held = append(held, p[:c.Hold(p)])
		case 3:
			if len(held) > 0 {
				k := rng.IntN(len(held))
				c.Unhold(held[k])
				held = slices.Delete(held, k, k+1)
			}
		}
		if c.Len() > c.Cap() {
			t.Fatalf("step %d: %d blocks in a cache of %d", step, c.Len(), c.Cap())
		}
		if got := len(c.Order()) + c.Held(); got != c.Len() {
			t.Fatalf("step %d: %d on the lists and %d held, %d resident", step, len(c.Order()), c.Held(), c.Len())
		}
		for _, q := range prompts {
			n := c.Prefix(q)
			for _, h := range q[n:] {
				if c.Contains(h) {
					t.Fatalf("step %d: block %d held after a gap at %d of %v", step, h, n, q)
				}
			}
		}
	}
}

// A prefix protected by one conversation and then, with a leaf, by
// another must still outlast the leaf when protected blocks are all that
// is left to evict.
func TestDeviceCacheProtectedPrefixOutlastsItsLeaves(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2, 3}) // 1 2 a shared prefix, 3 a leaf
	c.Admit([]uint64{1, 2, 4}) // a second conversation's leaf
	c.Protect([]uint64{1, 2, 3}, time.Minute)
	c.Protect([]uint64{1, 2, 4}, time.Minute)
	c.Protect([]uint64{1, 2}, time.Minute) // the prefix alone, again
	c.Protect([]uint64{1, 2, 3}, time.Minute)
	a := c.Admit([]uint64{9, 10})
	if len(a.Evicted) != 2 || slices.Contains(a.Evicted, 1) || slices.Contains(a.Evicted, 2) {
		t.Fatalf("evicted %v, want two leaves, never the shared prefix 1 2 (order %v)", a.Evicted, c.Order())
	}
}
