package index

import (
	"math/rand/v2"
	"testing"
)

// tableKey draws keys that stress a table: random, small consecutive
// numbers (which must still spread), and 0 (the empty marker).
func tableKey(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return uint64(r.IntN(3000))
	case 1:
		return 0
	default:
		return r.Uint64() >> r.IntN(64)
	}
}

func TestExtTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var tb extTable
	ref := map[uint64]uint64{}
	for i := range 100000 {
		k := tableKey(r)
		// Phases of growth and shrinkage.
		if (i/10000)%2 == 0 && r.IntN(3) > 0 || (i/10000)%2 == 1 && r.IntN(3) == 0 {
			v := r.Uint64()
			_, had := ref[k]
			if tb.put(k, v) == had {
				t.Fatalf("put(%d): new = %v, map had it = %v", k, !had, had)
			}
			ref[k] = v
		} else {
			v, ok := tb.remove(k)
			if rv, rok := ref[k]; ok != rok || v != rv {
				t.Fatalf("remove(%d) = %d, %v; want %d, %v", k, v, ok, rv, rok)
			}
			delete(ref, k)
			tb.shrink()
		}
		if i%1000 == 0 {
			if tb.len() != len(ref) {
				t.Fatalf("len %d, want %d", tb.len(), len(ref))
			}
			for k, v := range ref {
				if got, ok := tb.get(k); !ok || got != v {
					t.Fatalf("get(%d) = %d, %v; want %d", k, got, ok, v)
				}
			}
			seen := 0
			tb.all(func(k, v uint64) bool {
				if ref[k] != v {
					t.Fatalf("all: %d -> %d, want %d", k, v, ref[k])
				}
				seen++
				return true
			})
			if seen != len(ref) {
				t.Fatalf("all visited %d, want %d", seen, len(ref))
			}
		}
	}
	if n := tb.n(); n > slotsFor(len(ref))*2 {
		t.Fatalf("%d slots for %d keys: not shrunk", n, len(ref))
	}
}

func TestBitTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := newPage(2, 0)
	ref := map[uint64]uint64{}
	live := func() int {
		n := 0
		for i := range p.tabs {
			n += p.tabs[i].live
		}
		return n
	}
	for i := range 100000 {
		k := tableKey(r)
		bit := uint64(1) << r.IntN(3)
		if (i/10000)%2 == 0 && r.IntN(3) > 0 || (i/10000)%2 == 1 && r.IntN(3) == 0 {
			if p.set(k, bit) != (ref[k] == 0) {
				t.Fatalf("set(%d): became live wrong", k)
			}
			ref[k] |= bit
		} else {
			if p.clear(k, bit) != (ref[k] == bit) {
				t.Fatalf("clear(%d): died wrong", k)
			}
			if ref[k] &^= bit; ref[k] == 0 {
				delete(ref, k)
			}
		}
		if i%1000 == 0 {
			if live() != len(ref) {
				t.Fatalf("live %d, want %d", live(), len(ref))
			}
			for k, v := range ref {
				if got := p.lookup(k); got != v {
					t.Fatalf("lookup(%d) = %b, want %b", k, got, v)
				}
			}
			for range 100 {
				if k := r.Uint64(); p.lookup(k) != ref[k] {
					t.Fatalf("lookup(absent %d) = %b", k, p.lookup(k))
				}
			}
		}
	}
	for i := range p.tabs {
		tb := &p.tabs[i]
		if d := tb.cur.Load(); d != nil && d.n > slotsFor(tb.live)*shrinkDivisor {
			t.Fatalf("shard %d: %d slots for %d live keys", i, d.n, tb.live)
		}
	}
}
