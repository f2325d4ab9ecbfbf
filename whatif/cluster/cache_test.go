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
