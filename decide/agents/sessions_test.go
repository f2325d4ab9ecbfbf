package agents

import (
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

func plainReq(id, session string) *schemas.RequestEvent {
	return &schemas.RequestEvent{RequestID: id, SessionID: session, Model: "m", TokenIDs: []uint32{1, 2, 3, 4, 5}}
}

// The engine's own hints (wake-up prefetches, tool-call pins) get every
// outcome from the session's next request and response.
func TestEngineHintOutcomes(t *testing.T) {
	tr, w, m := newTracker(t, DefaultConfig())
	exp := func() time.Time { return w.now.Add(2 * time.Second) }

	// used: the next request is served by the prefetch's worker; the
	// request's buffer is reused by the engine afterwards.
	wake := plainReq("w1", "s1")
	tr.Prefetched(wake, 7, 0, exp())
	wake.TokenIDs[0] = 99
	tr.Turn(plainReq("r1", "s1"))
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "r1", WorkerID: 7})

	// wrong_worker, with the response consumed before its request.
	tr.Prefetched(plainReq("w2", "s2"), 7, 0, exp())
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "r2", WorkerID: 8})
	tr.Turn(plainReq("r2", "s2"))

	// not_loaded: the index never showed the blocks on the worker.
	tr.Prefetched(plainReq("w3", "s3"), 7, 0, exp())
	w.loaded = false
	tr.Turn(plainReq("r3", "s3"))
	w.loaded = true
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "r3", WorkerID: 7})

	// expired: no request before the expiry.
	tr.Prefetched(plainReq("w4", "s4"), 7, 0, exp())
	// Pins: kept (renewed past its first expiry), lapsed, released.
	tr.Pinned("p1", 7, 0, 64, w.now.Add(time.Second))
	tr.Renewed("p1", w.now.Add(10*time.Second))
	tr.Pinned("p2", 7, 0, 32, w.now.Add(time.Second))
	tr.Pinned("p3", 7, 0, 16, w.now.Add(10*time.Second))
	tr.Pinned("p3", 7, 0, 16, w.now.Add(10*time.Second)) // replaces the first
	w.now = w.now.Add(3 * time.Second)
	tr.Tick()
	tr.Turn(plainReq("r5", "p1"))
	tr.Turn(plainReq("r6", "p3"))

	got := m.OutcomeValues()
	want := map[string]uint64{"prefetch/used": 1, "prefetch/wrong_worker": 1, "prefetch/not_loaded": 1,
		"prefetch/expired": 1, "pin/kept": 2, "pin/lapsed": 1, "pin/released": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if s := m.TokensSaved.Value(); s != 5+64+16 {
		t.Errorf("tokens saved = %d, want %d", s, 5+64+16)
	}
	kinds := map[string]int{}
	for _, r := range tr.Recent() {
		kinds[r.Kind]++
	}
	if kinds[KindWakeupPrefetch] != 4 || kinds[KindToolCallPin] != 4 {
		t.Errorf("recent kinds = %v", kinds)
	}
	if n := tr.Sessions(); n != 0 {
		t.Errorf("%d sessions still held once every hint is settled", n)
	}
}

// However many sessions get hints and never come back, the state held
// for them stays within MaxPrograms, and every hint still gets a fate.
func TestEngineHintSessionsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPrograms = 64
	tr, w, m := newTracker(t, cfg)
	const n = 50_000
	for i := range n {
		s := fmt.Sprintf("s%d", i)
		tr.Prefetched(plainReq("w"+s, s), 7, 0, w.now.Add(time.Hour))
		tr.Pinned(s, 7, 0, 16, w.now.Add(time.Hour))
		if i%3 == 0 { // a turn whose response never comes
			tr.Turn(plainReq("r"+s, s))
		}
		if got := tr.Sessions(); got > cfg.MaxPrograms {
			t.Fatalf("after %d sessions: %d held, bound %d", i+1, got, cfg.MaxPrograms)
		}
	}
	tr.mu.Lock()
	byReq, early := len(tr.sessByReq), len(tr.early)
	tr.mu.Unlock()
	if byReq > cfg.MaxPrograms || early > maxEarly {
		t.Fatalf("requests awaiting a response: %d, early responses %d", byReq, early)
	}
	got := m.OutcomeValues()
	var prefetches, pinsN uint64
	for k, v := range got {
		switch k[:4] {
		case "pref":
			prefetches += v
		case "pin/":
			pinsN += v
		}
	}
	// Only the sessions still held have a hint pending.
	if held := uint64(tr.Sessions()); prefetches+held < n || pinsN+held < n {
		t.Fatalf("outcomes: %d prefetches, %d pins of %d each (%d held): %v", prefetches, pinsN, n, held, got)
	}
}
