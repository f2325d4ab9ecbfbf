package cluster

import (
	"slices"
	"testing"
	"time"
)

func TestL3CapacityAndLRU(t *testing.T) {
	s := NewL3Store(3)
	if n := s.Put([]string{"a", "b"}, 0); n != 2 {
		t.Fatalf("inserted %d", n)
	}
	s.Put([]string{"c"}, 0) // order: c a b
	s.Touch([]string{"b"})  // order: b c a
	s.Put([]string{"d"}, 0) // evicts a
	if s.Contains("a") || !s.Contains("b") || s.Len() != 3 {
		t.Fatalf("order %v: the least recently used page must go", s.Order())
	}
	if got := s.Order(); !slices.Equal(got, []string{"d", "b", "c"}) {
		t.Fatalf("order %v", got)
	}
	if s.Run([]string{"b", "c", "x", "d"}, 0) != 2 || s.Run([]string{"b", "c"}, 1) != 1 {
		t.Fatal("Run counts resident keys in a row")
	}
	if st := s.Stats(); st.Inserts != 4 || st.Evictions != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestL3EvictionSkipsPinnedPages(t *testing.T) {
	s := NewL3Store(3)
	s.Put([]string{"a", "b", "c"}, 0) // order: a b c
	s.Pin("session:1", []string{"c", "zz"}, time.Minute, 0)
	s.Put([]string{"d"}, time.Second) // c is least recent but pinned: b goes
	if !s.Contains("c") || s.Contains("b") {
		t.Fatalf("order %v: eviction must skip the pinned page", s.Order())
	}
	st := s.Stats()
	if st.Pins != 1 || st.PinnedKeys != 1 || st.PinKeysMissing != 1 || st.PinsBroken != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Everything pinned: the least recent pinned page goes, and the pin
	// counts as broken.
	s.Pin("session:2", []string{"a", "d"}, time.Minute, time.Second)
	s.Put([]string{"e"}, 2*time.Second)
	if s.Contains("c") || s.Stats().PinsBroken != 1 {
		t.Fatalf("order %v stats %+v", s.Order(), s.Stats())
	}
}

func TestL3PinExpiresOnTheSimulatedClock(t *testing.T) {
	s := NewL3Store(2)
	s.Put([]string{"a", "b"}, 0) // order: a b
	s.Pin("s", []string{"b"}, 10*time.Second, 0)
	if !s.Pinned("b", 9*time.Second) || s.Pinned("b", 10*time.Second) {
		t.Fatal("a pin lives for exactly its TTL")
	}
	s.Put([]string{"c"}, 5*time.Second) // b pinned: a goes
	if !s.Contains("b") || s.Contains("a") {
		t.Fatalf("order %v", s.Order())
	}
	s.Touch([]string{"c"})
	s.Put([]string{"d"}, 11*time.Second) // the pin has lapsed: b is fair game
	if s.Contains("b") || s.Stats().PinsBroken != 0 {
		t.Fatalf("order %v stats %+v: a lapsed pin protects nothing and breaks nothing", s.Order(), s.Stats())
	}
	// Releasing a lapsed slot later counts it as lapsed.
	s.Release("s", 12*time.Second)
	if st := s.Stats(); st.PinsLapsed != 1 || st.Releases != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestL3ReleaseAndReplace(t *testing.T) {
	s := NewL3Store(2)
	s.Put([]string{"a", "b"}, 0)
	s.Pin("s", []string{"b"}, time.Hour, 0)
	s.Pin("s", nil, 0, time.Second) // TTL 0 releases the slot
	if s.Pinned("b", time.Second) || s.Stats().Releases != 1 || s.Stats().PinsLapsed != 0 {
		t.Fatalf("release with TTL 0: stats %+v", s.Stats())
	}
	s.Pin("s", []string{"b"}, time.Hour, 0)
	s.Pin("s", []string{"a"}, time.Hour, 0) // a newer pin of the slot replaces it
	if s.Pinned("b", time.Second) || !s.Pinned("a", time.Second) {
		t.Fatal("a slot holds only its latest pin")
	}
	// A page pinned by two slots stays pinned until both are gone.
	s.Pin("t", []string{"a"}, time.Hour, 0)
	s.Release("s", time.Second)
	if !s.Pinned("a", time.Second) {
		t.Fatal("the other slot's pin must remain")
	}
	s.Release("t", time.Second)
	if s.Pinned("a", time.Second) {
		t.Fatal("no slot left: not pinned")
	}
}
