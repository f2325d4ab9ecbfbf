package cluster

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestPruningLapsedPinsChangesNothing plays the same random puts,
// touches, pins (some lapsing, many slots never released) and releases
// on a store that prunes lapsed pins' keys and one that keeps them:
// every answer (order, pinned, slot times, runs) and every statistic
// must be equal, and the pruning store must hold fewer pinned keys.
func TestPruningLapsedPinsChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	a, b := NewL3Store(64), NewL3Store(64)
	b.noPrune = true
	key := func() string { return "k" + strconv.Itoa(rng.IntN(200)) }
	keys := func() []string {
		out := make([]string, 1+rng.IntN(8))
		for i := range out {
			out[i] = key()
		}
		return out
	}
	var now time.Duration
	for step := range 40000 {
		now += time.Duration(rng.IntN(50)) * time.Millisecond
		slot := "request:" + strconv.Itoa(rng.IntN(3000))
		switch op := rng.IntN(10); {
		case op < 4:
			ks := keys()
			if na, nb := a.Put(ks, now), b.Put(ks, now); na != nb {
				t.Fatalf("step %d: put %d vs %d", step, na, nb)
			}
		case op < 5:
			ks := keys()
			a.Touch(ks)
			b.Touch(ks)
		case op < 8:
			ks, ttl := keys(), time.Duration(rng.IntN(2000))*time.Millisecond
			a.Pin(slot, ks, ttl, now)
			b.Pin(slot, ks, ttl, now)
		case op < 9:
			a.Release(slot, now)
			b.Release(slot, now)
		default:
			ks := keys()
			if a.Run(ks, 0) != b.Run(ks, 0) {
				t.Fatalf("step %d: runs differ", step)
			}
		}
		k := key()
		if a.Pinned(k, now) != b.Pinned(k, now) {
			t.Fatalf("step %d: pinned(%s) differs", step, k)
		}
		ua, oka := a.SlotUntil(slot)
		ub, okb := b.SlotUntil(slot)
		if ua != ub || oka != okb {
			t.Fatalf("step %d: slot %s until %v/%v vs %v/%v", step, slot, ua, oka, ub, okb)
		}
	}
	if !slices.Equal(a.Order(), b.Order()) || a.Stats() != b.Stats() {
		t.Fatalf("stats %+v vs %+v", a.Stats(), b.Stats())
	}
	held := func(s *L3Store) (n int) {
		for _, sl := range s.slots {
			n += len(sl.keys)
		}
		return n
	}
	if ha, hb := held(a), held(b); ha >= hb {
		t.Fatalf("pruning holds %d slot keys, keeping %d: nothing pruned", ha, hb)
	}
	if st := a.Stats(); st.PinsLapsed == 0 || st.Evictions == 0 || st.PinnedKeys == 0 {
		t.Fatalf("the sequence does not exercise lapses and evictions: %+v", st)
	}
}

// TestLapsedSlotsForgottenAfterTheirMemory pins a new slot every second
// for five simulated hours, each for a minute and never released (a
// conversation's last pin): the store must keep knowing a slot for
// DefaultForgetLapsed after its lapse, then forget it, so it holds about
// an hour of slots, not five; a live pin's slot is never forgotten.
func TestLapsedSlotsForgottenAfterTheirMemory(t *testing.T) {
	s := NewL3Store(16)
	s.Put([]string{"a", "b"}, 0)
	s.Pin("live", []string{"a"}, 24*time.Hour, 0)
	const steps = 5 * 3600
	most := 0
	for k := range steps {
		now := time.Duration(k) * time.Second
		s.Pin("request:"+strconv.Itoa(k), []string{"b"}, time.Minute, now)
		most = max(most, len(s.slots))
		if k >= 3600 {
			// Lapsed 59 minutes ago: still known, as lapsed.
			old := k - 3600 + 60
			if until, ok := s.SlotUntil("request:" + strconv.Itoa(old)); !ok || until > now {
				t.Fatalf("at %v: slot %d lapsed %v ago not known as lapsed (%v, %v)", now, old, now-until, until, ok)
			}
		}
	}
	if _, ok := s.SlotUntil("request:0"); ok {
		t.Fatal("a slot lapsed over four hours ago is still known")
	}
	if until, ok := s.SlotUntil("live"); !ok || until != 24*time.Hour {
		t.Fatalf("the live pin's slot: %v %v", until, ok)
	}
	// An hour and a minute of slots, plus up to one prune's worth.
	if limit := 2*(3600+60) + 1024; most > limit {
		t.Fatalf("held %d slots at most over %d pins, want ≤ %d", most, steps, limit)
	}
	if !s.Pinned("a", time.Duration(steps)*time.Second) {
		t.Fatal("the live pin was dropped")
	}
}
