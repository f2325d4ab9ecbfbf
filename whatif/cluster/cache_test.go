package cluster

import (
	"slices"
	"testing"
)

func TestDeviceCacheHitsAndPrefixOrder(t *testing.T) {
	c := NewDeviceCache(8)
	a := c.Admit([]uint64{1, 2, 3})
	if a.Hit != 0 || !slices.Equal(a.Stored, []Run{{0, 3}}) || len(a.Evicted) != 0 {
		t.Fatalf("first admission: %+v", a)
	}
	// A prompt's first block is the most recent, its last the least.
	if got := c.Order(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("order %v, want 1 2 3", got)
	}
	a = c.Admit([]uint64{1, 2, 4, 5})
	if a.Hit != 2 || !slices.Equal(a.Stored, []Run{{2, 4}}) {
		t.Fatalf("second admission: %+v", a)
	}
	if got := c.Order(); !slices.Equal(got, []uint64{1, 2, 4, 5, 3}) {
		t.Fatalf("order %v, want 1 2 4 5 3", got)
	}
	if c.Prefix([]uint64{1, 2, 4, 9}) != 3 || c.Prefix([]uint64{9, 1}) != 0 {
		t.Fatal("prefix counts leading held blocks only")
	}
}

func TestDeviceCacheEvictsLeastRecentLeavesFirst(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2, 3})
	c.Admit([]uint64{7})         // order: 7 1 2 3
	a := c.Admit([]uint64{8, 9}) // needs two slots: 3 then 2 go, never 1 before 2
	if !slices.Equal(a.Evicted, []uint64{3, 2}) {
		t.Fatalf("evicted %v, want [3 2] (least recent, leaf first)", a.Evicted)
	}
	if got := c.Order(); !slices.Equal(got, []uint64{8, 9, 7, 1}) {
		t.Fatalf("order %v", got)
	}
	if c.Prefix([]uint64{1, 2, 3}) != 1 {
		t.Fatal("what remains of a prompt must be a prefix")
	}
	if c.Evictions() != 2 || c.Len() != 4 {
		t.Fatalf("evictions %d len %d", c.Evictions(), c.Len())
	}
}

func TestDeviceCacheAdmitNeverEvictsItsOwnPrompt(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2})
	c.Admit([]uint64{5, 6}) // order: 5 6 1 2; 1 and 2 are the oldest
	a := c.Admit([]uint64{1, 2, 3, 4})
	if a.Hit != 2 || !slices.Equal(a.Evicted, []uint64{6, 5}) {
		t.Fatalf("admission %+v: the held prefix must survive making room", a)
	}
	if got := c.Order(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("order %v", got)
	}
	// Longer than the cache: the first Cap blocks only.
	a = c.Admit([]uint64{10, 11, 12, 13, 14, 15})
	if c.Len() != 4 || !slices.Equal(c.Order(), []uint64{10, 11, 12, 13}) || !slices.Equal(a.Stored, []Run{{0, 4}}) {
		t.Fatalf("oversized prompt: order %v admission %+v", c.Order(), a)
	}
}

func TestDeviceCacheKeepsHeldBlocks(t *testing.T) {
	c := NewDeviceCache(4)
	c.Admit([]uint64{1, 2, 3})
	if n := c.Hold([]uint64{1, 2, 3, 9}); n != 3 {
		t.Fatalf("held %d, want the 3 resident leading blocks", n)
	}
	// One free slot: only the first new block of the prompt is stored,
	// and no held block goes.
	a := c.Admit([]uint64{5, 6, 7})
	if len(a.Evicted) != 0 || !slices.Equal(a.Stored, []Run{{0, 1}}) || c.Unstored() != 2 {
		t.Fatalf("admission %+v, unstored %d", a, c.Unstored())
	}
	for _, h := range []uint64{1, 2, 3, 5} {
		if !c.Contains(h) {
			t.Fatalf("block %d gone", h)
		}
	}
	// Released, the request's blocks are the most recent, its first most
	// of all: the next admission evicts 5 first, then 3.
	c.Unhold([]uint64{1, 2, 3})
	if c.Held() != 0 || !slices.Equal(c.Order(), []uint64{1, 2, 3, 5}) {
		t.Fatalf("held %d, order %v", c.Held(), c.Order())
	}
	if a = c.Admit([]uint64{8, 9}); !slices.Equal(a.Evicted, []uint64{5, 3}) {
		t.Fatalf("evicted %v, want [5 3]", a.Evicted)
	}
	// Two requests hold block 8: it stays until both end.
	c.Hold([]uint64{8})
	c.Hold([]uint64{8})
	c.Unhold([]uint64{8})
	c.Admit([]uint64{20, 21, 22, 23})
	if !c.Contains(8) {
		t.Fatal("block 8 evicted while a request still holds it")
	}
	c.Unhold([]uint64{8})
	c.Admit([]uint64{30, 31, 32, 33})
	if c.Contains(8) || c.Len() != 4 {
		t.Fatalf("after both ended: order %v", c.Order())
	}
}
