package ahead

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/observe/metrics"
)

var t0 = time.UnixMilli(1 << 40)

func newTest(t *testing.T, cfg Config) (*Scheduler, *metrics.Families) {
	t.Helper()
	f := metrics.New()
	s, err := New(cfg, &f.Ahead)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func tokens(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// play gives session sess turns every gap, each answered after 1 s on
// worker 1, from start; it returns the time of the last turn.
func play(s *Scheduler, sess string, start time.Time, gap time.Duration, turns int) time.Time {
	at := start
	for k := range turns {
		id := sess + "-" + strconv.Itoa(k)
		s.Request(at, Turn{RequestID: id, Session: sess, Model: "m", Tokens: tokens(1000)})
		s.Response(at.Add(time.Second), id, sess, 1, false, 0)
		if k < turns-1 {
			at = at.Add(gap)
		}
	}
	return at
}

// A session with a regular rhythm gets its prefetch before its next turn
// is due, at about the learned gap less the load time, and using it
// counts its bytes as used.
func TestRegularRhythmIsPrefetchedBeforeTheTurn(t *testing.T) {
	cfg := Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6} // 1000 tokens load in 1 s
	s, f := newTest(t, cfg)
	last := play(s, "a", t0, 30*time.Second, 8)
	next := last.Add(30 * time.Second)
	// Nothing is due long before the turn.
	if due := s.Due(last.Add(10 * time.Second)); len(due) != 0 {
		t.Fatalf("due 20 s early: %+v", due)
	}
	var got []Prefetch
	at := last.Add(10 * time.Second)
	for ; at.Before(next) && len(got) == 0; at = at.Add(100 * time.Millisecond) {
		got = s.Due(at)
	}
	if len(got) != 1 {
		t.Fatalf("no prefetch before the turn at %v (stats %+v)", next.Sub(last), s.Stats())
	}
	p := got[0]
	if !s.Admit(&p, 0) {
		t.Fatal("not admitted in the warm-up")
	}
	if p.Session != "a" || p.Kind != KindTurn || len(p.Tokens) != 1000 || p.Bytes != 1000*1e6 ||
		!p.Expires.After(next) || next.Sub(at) > 5*time.Second {
		t.Fatalf("prefetch %+v sent %v before the turn", p, next.Sub(at))
	}
	s.Queued(p, 1)
	s.Request(next, Turn{RequestID: "a-next", Session: "a", Tokens: tokens(1100)})
	s.Response(next.Add(time.Second), "a-next", "a", 1, false, 0)
	st := s.Stats()
	if st.Used != 1 || st.UsedBytes != p.Bytes || st.WastedBytes != 0 || st.Outstanding != 0 {
		t.Fatalf("stats %+v", st)
	}
	if f.Ahead.UsedBytes.Value() != uint64(p.Bytes) || f.Ahead.Queued.Value() != 1 {
		t.Fatalf("counters %v", f.Summary())
	}
}

// A turn that runs on another worker, or does not come before the
// prefetch expires, wastes its bytes; past the budget no prefetch is
// sent (counted), and used bytes reopen it.
func TestWasteBudgetStopsPrefetches(t *testing.T) {
	cfg := Config{L3Bandwidth: 1e9, KVBytesPerToken: 1, MaxWaste: 1, WarmupTokens: -1}
	s, f := newTest(t, cfg)
	p := Prefetch{Key: "s:a", Tokens: tokens(1000)}
	s.Request(t0, Turn{RequestID: "r0", Session: "a", Tokens: tokens(10)})
	p.Expires = t0.Add(time.Minute)
	s.cfg.WarmupTokens = 1000 // admitted through the warm-up, then none
	if !s.Admit(&p, 0) || p.Bytes != 1000 {
		t.Fatalf("not admitted in the warm-up: %+v", p)
	}
	s.cfg.WarmupTokens = 0
	s.Queued(p, 1)
	s.Request(t0.Add(30*time.Second), Turn{RequestID: "r1", Session: "a", Tokens: tokens(10)})
	s.Response(t0.Add(31*time.Second), "r1", "a", 2, false, 0) // ran on worker 2
	if st := s.Stats(); st.WastedBytes != 1000 || st.UsedBytes != 0 || f.Ahead.WastedBytes.Value("wrong_worker") != 1000 {
		t.Fatalf("wrong worker: stats %+v", st)
	}
	// Over budget (1000 wasted, 0 used, no warm-up): a due plan is not
	// admitted.
	last := play(s, "b", t0, 20*time.Second, 8)
	var due []Prefetch
	for at := last; at.Before(last.Add(40*time.Second)) && len(due) == 0; at = at.Add(time.Second) {
		due = s.Due(at)
	}
	if len(due) != 1 || s.Admit(&due[0], 0) {
		t.Fatalf("admitted over budget: %+v", due)
	}
	if n := f.Ahead.Skipped.Value("over_budget"); n != 1 {
		t.Fatalf("over budget not counted: %v", f.Summary())
	}
	// A prefetch used (2000 bytes) brings the ratio to 0.5: open again.
	q := Prefetch{Key: "s:b", Bytes: 2000, Tokens: tokens(2000), Expires: last.Add(time.Hour), admitted: true}
	s.st.Outstanding += q.Bytes // admitted by hand: the budget is shut
	s.Queued(q, 3)
	s.Request(last.Add(50*time.Second), Turn{RequestID: "rb", Session: "b", Tokens: tokens(10)})
	s.Response(last.Add(51*time.Second), "rb", "b", 3, false, 0)
	if st := s.Stats(); st.UsedBytes != 2000 || st.WasteRatio != 0.5 || !s.allowed(1000) || s.allowed(1001) {
		t.Fatalf("after use: %+v", st)
	}
	// One that expires unused counts as expired.
	r := Prefetch{Key: "s:b", Tokens: tokens(500), Expires: last.Add(55 * time.Second)}
	if !s.Admit(&r, 0) {
		t.Fatal("500 bytes not admitted at 1000 wasted, 2000 used")
	}
	s.Queued(r, 3)
	s.Due(last.Add(57 * time.Second))
	if f.Ahead.WastedBytes.Value("expired") != 500 {
		t.Fatalf("expired: %v", f.Summary())
	}
}

// With the warm-up allowance, the first prefetches go out before any
// is used.
func TestWarmupAllowance(t *testing.T) {
	s, _ := newTest(t, Config{KVBytesPerToken: 1, WarmupTokens: 100})
	s.st.WastedBytes, s.st.Outstanding = 40, 50
	if !s.allowed(10) {
		t.Fatal("100 bytes wasted or in flight within a 100-token allowance at 1 byte a token")
	}
	if s.allowed(11) {
		t.Fatal("allowed past the allowance, counting what is in flight")
	}
}

// Sessions that rarely come back are not prefetched: the expected waste
// is over the budget's ratio.
func TestUnlikelyTurnsAreNotPrefetched(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	// Many one-turn sessions teach that a first turn is rarely followed,
	// and a few two-turn ones teach the gap.
	at := t0
	for k := range 200 {
		sess := "one-" + strconv.Itoa(k)
		s.Request(at, Turn{RequestID: sess, Session: sess, Tokens: tokens(10)})
		at = at.Add(10 * time.Second)
	}
	play(s, "two", at, 30*time.Second, 2)
	at = at.Add(11 * time.Minute)
	s.Due(at) // ages the one-turn sessions out
	before := f.Ahead.Skipped.Value("unlikely")
	s.Request(at, Turn{RequestID: "new", Session: "new", Tokens: tokens(10)})
	if f.Ahead.Skipped.Value("unlikely") != before+1 || s.entries["s:new"].plan != nil {
		t.Fatalf("a first turn was planned (P(next) %.2f): %v", s.cont[classFirst].p(), f.Summary())
	}
}

// A tool call predicts the next turn from the tool's learned time once
// the tool predictions' spread is known.
func TestToolCallPredictsFromTheToolTime(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	at := t0
	for k := range 10 {
		id := "t-" + strconv.Itoa(k)
		s.Request(at, Turn{RequestID: id, Session: "t", Tokens: tokens(100)})
		s.Response(at.Add(time.Second), id, "t", 1, true, 20*time.Second)
		at = at.Add(21 * time.Second)
	}
	e := s.entries["s:t"]
	if f.Ahead.Predictions.Value(KindTool) == 0 || e.plan == nil || e.plan.Kind != KindTool {
		t.Fatalf("no tool prediction: %v", f.Summary())
	}
	if d := e.plan.Arrival.Sub(e.anchor); (d - 20*time.Second).Abs() > time.Millisecond {
		t.Fatalf("predicted %v after the tool call, want the tool's 20 s", d)
	}
}

// State is bounded by MaxSessions and by the prompt tokens kept.
func TestSessionsBounded(t *testing.T) {
	s, _ := newTest(t, Config{MaxSessions: 3})
	for k := range 10 {
		s.Request(t0, Turn{RequestID: strconv.Itoa(k), Session: strconv.Itoa(k), Tokens: tokens(5)})
	}
	if n := s.Stats().Followed; n != 3 || s.held != 15 {
		t.Fatalf("%d followed, %d tokens held", n, s.held)
	}
	s, _ = newTest(t, Config{MaxTokens: 25})
	for k := range 10 {
		s.Request(t0, Turn{RequestID: strconv.Itoa(k), Session: strconv.Itoa(k), Tokens: tokens(10)})
	}
	if n := s.Stats().Followed; n != 2 || s.held != 20 || s.entries["s:9"] == nil {
		t.Fatalf("%d followed, %d tokens held", n, s.held)
	}
	s.Wakeup(t0, "9") // announced: its prompt is not kept
	if s.held != 10 {
		t.Fatalf("%d tokens held after a wake-up", s.held)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{MaxWaste: -1}, {MaxWaste: math.NaN()}, {L3Bandwidth: -1}, {KVBytesPerToken: -1},
		{MaxHold: time.Hour}, {MaxSessions: -1}, {MaxTokens: -1}, {PriorWeight: -1}} {
		if _, err := New(c, nil); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := New(Config{}, nil); err != nil {
		t.Fatal(err)
	}
}

// A session whose turns come with wake-ups is not guessed at: the
// wake-up's own prefetch covers it.
func TestAnnouncedSessionsAreLeftToTheirWakeups(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	last := play(s, "w", t0, 30*time.Second, 6)
	if s.entries["s:w"].plan == nil {
		t.Fatal("no plan for a regular session")
	}
	s.Wakeup(last.Add(20*time.Second), "w")
	if s.entries["s:w"].plan != nil || f.Ahead.Skipped.Value("announced") != 1 {
		t.Fatalf("plan kept after a wake-up: %v", f.Summary())
	}
	s.Request(last.Add(30*time.Second), Turn{RequestID: "w-next", Session: "w", Tokens: tokens(10)})
	if s.entries["s:w"].plan != nil {
		t.Fatal("an announced session was planned again")
	}
	if due := s.Due(last.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("due: %+v", due)
	}
}

// Prefetches due together are admitted one after another: each one's
// bytes count as in flight for the next.
func TestBudgetCountsPrefetchesDueTogether(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1, WarmupTokens: 2500})
	var last time.Time
	for i := range 4 {
		last = play(s, "s"+strconv.Itoa(i), t0, 30*time.Second, 8) // 1000 tokens each, due together
	}
	due := s.Due(last.Add(30 * time.Second))
	var admitted []Prefetch
	for i := range due {
		if s.Admit(&due[i], 0) {
			admitted = append(admitted, due[i])
		}
	}
	if len(due) != 4 || len(admitted) != 2 || f.Ahead.Skipped.Value("over_budget") != 2 || s.Stats().Outstanding != 2000 {
		t.Fatalf("%d of %d admitted within a 2500-byte allowance of 1000-byte prefetches; %v", len(admitted), len(due), f.Summary())
	}
	s.Skipped(admitted[1], "no_worker")
	s.Queued(admitted[0], 1)
	if st := s.Stats(); st.Outstanding != 1000 || st.Queued != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Only what a prefetch loads counts: the part already on the device is
// neither used nor wasted, and the part evicted before the turn came is
// wasted (the index's view when the turn comes).
func TestUsedIsWhatWasLoadedAndStillHeld(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1})
	s.Request(t0, Turn{RequestID: "r0", Session: "a", Tokens: tokens(1000)})
	p := Prefetch{Key: "s:a", Tokens: tokens(1000), Expires: t0.Add(time.Minute)}
	if !s.Admit(&p, 200) || p.Bytes != 800 { // 200 tokens were on the device: loads 800
		t.Fatalf("admitted %+v", p)
	}
	s.Queued(p, 1)
	if st := s.Stats(); st.Outstanding != 800 {
		t.Fatalf("outstanding %d, want the 800 loaded", st.Outstanding)
	}
	held := func(worker uint64, toks []uint32) int {
		if worker != 1 || len(toks) != 1000 {
			t.Errorf("held asked for worker %d, %d tokens", worker, len(toks))
		}
		return 600 // 400 of the 800 loaded were evicted
	}
	s.Request(t0.Add(30*time.Second), Turn{RequestID: "r1", Session: "a", Tokens: tokens(1100), Held: held})
	s.Response(t0.Add(31*time.Second), "r1", "a", 1, false, 0)
	st := s.Stats()
	if st.UsedBytes != 400 || st.WastedBytes != 400 || st.Outstanding != 0 || f.Ahead.WastedBytes.Value("evicted") != 400 {
		t.Fatalf("stats %+v; %v", st, f.Summary())
	}
}

// A turn's response may be consumed before the turn itself (two
// streams): the prefetch is settled when the turn comes.
func TestResponseBeforeItsTurn(t *testing.T) {
	s, _ := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1})
	s.Request(t0, Turn{RequestID: "r0", Session: "a", Tokens: tokens(100)})
	p := Prefetch{Key: "s:a", Tokens: tokens(100), Expires: t0.Add(time.Minute)}
	if !s.Admit(&p, 0) {
		t.Fatal("not admitted")
	}
	s.Queued(p, 4)
	s.Response(t0.Add(31*time.Second), "r1", "a", 4, false, 0)
	s.Request(t0.Add(30*time.Second), Turn{RequestID: "r1", Session: "a", Tokens: tokens(120)})
	if st := s.Stats(); st.Used != 1 || st.UsedBytes != 100 || st.Outstanding != 0 {
		t.Fatalf("stats %+v", st)
	}
	if a := s.entries["s:a"].anchor; !a.Equal(t0.Add(31 * time.Second)) {
		t.Fatalf("anchor %v: moved back to the turn", a.Sub(t0))
	}
}

// A plan whose window ran out before anything asked for it (a member far
// behind its events) is counted late, not dropped without a word.
func TestPlanRunOutIsCountedLate(t *testing.T) {
	s, f := newTest(t, Config{L3Bandwidth: 1e9, KVBytesPerToken: 1e6})
	last := play(s, "a", t0, 30*time.Second, 8)
	before := s.Stats().Late
	if due := s.Due(last.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("sent %+v an hour after its window", due)
	}
	if got := s.Stats().Late; got != before+1 {
		t.Fatalf("late %d, want %d: the run-out plan was not counted", got, before+1)
	}
	if got := f.Ahead.Skipped.Value("late"); got != before+1 {
		t.Fatalf("hintstream_ahead_skipped_total{reason=late} %d, want %d", got, before+1)
	}
}
