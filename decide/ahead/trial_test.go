package ahead

import (
	"strconv"
	"testing"
	"time"
)

// playTicked plays session sess's turns at the gaps given from start,
// each answered after 1 s on worker 1, asking Due every second as a live
// instance's tick does; it returns the prefetches that came due, and the
// time of the last turn.
func playTicked(s *Scheduler, sess string, start time.Time, gaps []time.Duration) ([]Prefetch, time.Time) {
	var due []Prefetch
	at := start
	for k := 0; ; k++ {
		id := sess + "-" + strconv.Itoa(k)
		s.Request(at, Turn{RequestID: id, Session: sess, Model: "m", Tokens: tokens(1000)})
		s.Response(at.Add(time.Second), id, sess, 1, false, 0)
		if k == len(gaps) {
			return due, at
		}
		next := at.Add(gaps[k])
		for tick := at.Add(time.Second); tick.Before(next); tick = tick.Add(time.Second) {
			due = append(due, s.Due(tick)...)
		}
		at = next
	}
}

// A predictor that has not been right yet sends nothing, though the
// warm-up allowance would admit it: sessions whose gaps keep growing
// (each twice the last) are predicted too early, every would-be prefetch
// runs out before its turn, and none is sent (counted as "trial"). A
// session with a steady rhythm then shows the predictor right, and its
// prefetches are sent.
func TestTrialKeepsAnUnprovenPredictorSilent(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	var growing []time.Duration
	for g := 5 * time.Second; g < 10*time.Minute; g *= 2 {
		growing = append(growing, g)
	}
	at := t0
	for i := range 5 {
		due, last := playTicked(s, "grow-"+strconv.Itoa(i), at, growing)
		if len(due) != 0 {
			t.Fatalf("session %d: sent %d before the predictor was right once (stats %+v, trial %+v)", i, len(due), s.Stats(), s.trial)
		}
		at = last.Add(time.Minute)
	}
	if st := s.Stats(); st.Trial == 0 || f.Ahead.Skipped.Value("trial") != st.Trial || s.trial.wasted == 0 {
		t.Fatalf("no plan held back by the trial: stats %+v, trial %+v", st, s.trial)
	}
	steady := make([]time.Duration, 40)
	for k := range steady {
		steady[k] = 30 * time.Second
	}
	due, _ := playTicked(s, "steady", at, steady)
	if len(due) == 0 || !s.trial.open(1, 1e9) {
		t.Fatalf("a steady rhythm sent nothing: stats %+v, trial %+v", s.Stats(), s.trial)
	}
}

// A prefetch whose load (at the configured bandwidth) had not finished
// when its turn came was used only for the part loaded by then: 1000
// bytes at 1000 bytes/s, the turn after 0.25 s, uses 250.
func TestTurnDuringTheLoadUsesWhatWasLoaded(t *testing.T) {
	s, _ := newTest(t, Config{L3Bandwidth: 1000, KVBytesPerToken: 1})
	s.Request(t0, Turn{RequestID: "r0", Session: "a", Tokens: tokens(10)})
	p := Prefetch{Key: "s:a", Tokens: tokens(1000), Expires: t0.Add(time.Minute)}
	if !s.Admit(&p, 0) {
		t.Fatal("not admitted in the warm-up")
	}
	s.Due(t0.Add(10 * time.Second)) // the clock the prefetch is sent at
	s.Queued(p, 1)
	s.Request(t0.Add(10*time.Second+250*time.Millisecond), Turn{RequestID: "r1", Session: "a", Tokens: tokens(1000),
		Held: func(uint64, []uint32) int { return 1000 }})
	s.Response(t0.Add(11*time.Second), "r1", "a", 1, false, 0)
	if st := s.Stats(); st.UsedBytes != 250 || st.WastedBytes != 750 {
		t.Fatalf("stats %+v: want 250 used, 750 wasted", st)
	}
}

// A session's next turn is not prefetched before its turn's response: a
// prediction from the turn would be replaced by the response's (a tool
// call says when), and a prefetch sent for it in between wasted. The
// response makes the plan that is sent.
func TestSessionPrefetchedOnlyAfterTheResponse(t *testing.T) {
	s, _ := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	last := play(s, "a", t0, 30*time.Second, 8)
	next := last.Add(30 * time.Second)
	s.Request(next, Turn{RequestID: "a-8", Session: "a", Tokens: tokens(1000)})
	// Long past the predicted gap, the response still not seen.
	for at := next; at.Before(next.Add(40 * time.Second)); at = at.Add(time.Second) {
		if due := s.Due(at); len(due) != 0 {
			t.Fatalf("sent %+v before the turn's response", due)
		}
	}
	resp := next.Add(41 * time.Second)
	s.Response(resp, "a-8", "a", 1, false, 0)
	var due []Prefetch
	for at := resp; at.Before(resp.Add(40*time.Second)) && len(due) == 0; at = at.Add(time.Second) {
		due = s.Due(at)
	}
	if len(due) != 1 || !due[0].Arrival.After(resp) {
		t.Fatalf("after the response: due %+v", due)
	}
}

// A turn whose response was consumed first (two streams) is predicted
// when the turn comes, with the turn's prompt.
func TestSessionPredictedWhenTheResponseCameFirst(t *testing.T) {
	s, _ := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	last := play(s, "a", t0, 30*time.Second, 8)
	next := last.Add(30 * time.Second)
	s.Response(next.Add(time.Second), "a-8", "a", 1, false, 0)
	s.Request(next, Turn{RequestID: "a-8", Session: "a", Tokens: tokens(1000)})
	e := s.entries["s:a"]
	if e.plan == nil || len(e.plan.Tokens) != 1000 {
		t.Fatalf("no plan from the early response: kind %q, plan %+v", e.kind, e.plan)
	}
}

// Five turns a minute apart, replayed at once from the past as a service
// sees them (event times behind the wall clock it ticks with), with each
// turn's response before or after it, or every response after all the
// turns (a lagging stream): the gaps are learned, the would-be prefetches
// are used, and the next turn's prefetch is due now.
func TestShortSteadyHistoryOpensTheTrialInEitherOrder(t *testing.T) {
	lagging, _ := newTest(t, Config{KVBytesPerToken: 1000, L3Bandwidth: 1e10, WarmupTokens: 64})
	lastResp := t0.Add(-57 * time.Second)
	turnAt := func(k int) time.Time { return lastResp.Add(-time.Duration(4-k) * time.Minute).Add(-time.Second) }
	lagging.Due(t0)
	for k := range 5 {
		lagging.Request(turnAt(k), Turn{RequestID: "r-" + strconv.Itoa(k), Session: "a", Model: "m", Tokens: tokens(16 * (4 + k))})
	}
	for k := range 5 {
		lagging.Response(turnAt(k).Add(time.Second), "r-"+strconv.Itoa(k), "a", 2, false, 0)
	}
	if due := lagging.Due(t0); len(due) != 1 || len(due[0].Tokens) != 16*8 {
		t.Fatalf("responses lagging: due %d, stats %+v, trial %+v", len(due), lagging.Stats(), lagging.trial)
	}
	for _, early := range []bool{false, true} {
		s, _ := newTest(t, Config{KVBytesPerToken: 1000, L3Bandwidth: 1e10, WarmupTokens: 64})
		now := t0
		s.Due(now)
		lastResp := now.Add(-57 * time.Second)
		var due []Prefetch
		for k := range 5 {
			at := lastResp.Add(-time.Duration(4-k) * time.Minute).Add(-time.Second)
			id := "r-" + strconv.Itoa(k)
			if early {
				s.Response(at.Add(time.Second), id, "a", 2, false, 0)
			}
			s.Request(at, Turn{RequestID: id, Session: "a", Model: "m", Tokens: tokens(16 * (4 + k))})
			if !early {
				s.Response(at.Add(time.Second), id, "a", 2, false, 0)
			}
			due = append(due, s.Due(now)...)
		}
		if len(due) != 1 || len(due[0].Tokens) != 16*8 || s.Stats().Trial != 0 {
			t.Fatalf("response first %v: due %d, stats %+v, trial %+v", early, len(due), s.Stats(), s.trial)
		}
	}
}
