package routing

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// clock is a settable clock for the selector.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// idleThree is three idle workers with nothing cached and a 160-token
// prompt: every logit is 160/16 + floor(160/16) = 10 + 10 = 20.
func idleThree(opts ...Option) (*Selector, []uint32) {
	ws := staticWorkers{worker(1, "m", 16, 1), worker(2, "m", 16, 1), worker(3, "m", 16, 1)}
	return mustSelector(NewSelector(ws, index.New(), NewLoadTable(), opts...)), prompt(160)
}

// burst selects n wake-ups for the same prompt at once and counts the
// workers chosen.
func burst(t *testing.T, s *Selector, p []uint32, n int) map[uint64]int {
	t.Helper()
	var wg sync.WaitGroup
	got := make(chan uint64, n)
	for i := range n {
		wg.Go(func() {
			c, err := s.Select(&schemas.RequestEvent{RequestID: fmt.Sprint("burst-", i), Model: "m", TokenIDs: p})
			if err != nil {
				t.Error(err)
				return
			}
			got <- c.Worker.WorkerID
		})
	}
	wg.Wait()
	close(got)
	counts := map[uint64]int{}
	for id := range got {
		counts[id]++
	}
	return counts
}

// TestSpreadingBurst: six concurrent wake-ups with equal state. Without
// spreading all six see logit 20 everywhere and the tie goes to worker 1.
// With spreading (clock frozen, so nothing decays) each choice adds
// floor(160/16) = 10 virtual blocks:
//
//	1st: 20, 20, 20 → w1 (tie: lowest id), w1 becomes 30
//	2nd: 30, 20, 20 → w2;  3rd: 30, 30, 20 → w3
//	4th: 30, 30, 30 → w1;  5th → w2;  6th → w3
//
// so two each, whatever order the goroutines take the lock in.
func TestSpreadingBurst(t *testing.T) {
	s, p := idleThree()
	if got := burst(t, s, p, 6); got[1] != 6 {
		t.Fatalf("without spreading: %v, want all 6 on worker 1", got)
	}
	clk := &clock{t: time.Unix(1000, 0)}
	s, p = idleThree(spreading(0), WithClock(clk.now))
	if got := burst(t, s, p, 6); got[1] != 2 || got[2] != 2 || got[3] != 2 {
		t.Fatalf("with spreading: %v, want 2 on each worker", got)
	}
	// Candidates shows the booked load and books nothing itself:
	// each worker holds 10+10 = 20 virtual blocks → logit 10 + (10+20) = 40.
	for range 2 {
		for _, c := range s.Candidates(&schemas.RequestEvent{RequestID: "look", Model: "m", TokenIDs: p}) {
			if c.VirtualBlocks != 20 || c.Logit != 40 {
				t.Fatalf("%+v: virtual %v logit %v, want 20 and 40", c.Worker, c.VirtualBlocks, c.Logit)
			}
		}
	}
}

// TestSpreadingDecays: one wake-up books 10 virtual blocks on worker 1
// (logit 20 → 30); after one half-life they are 10/2 = 5 (logit 25), after
// two 10/4 = 2.5 (logit 22.5).
func TestSpreadingDecays(t *testing.T) {
	for _, hl := range []time.Duration{0, time.Second} { // 0: the 2 s default
		clk := &clock{t: time.Unix(1000, 0)}
		s, p := idleThree(spreading(hl), WithClock(clk.now))
		if got := s.Config().Spread; !got.Enabled || (hl == 0 && got.HalfLife != 2*time.Second) {
			t.Fatalf("spread config %+v", got)
		}
		half := s.Config().Spread.HalfLife
		req := &schemas.RequestEvent{RequestID: "w", Model: "m", TokenIDs: p}
		if c, _ := s.Select(req); c.Worker != key(1, 0) {
			t.Fatalf("first choice %v", c.Worker)
		}
		for _, step := range []struct {
			after   time.Duration
			virtual float64
		}{{0, 10}, {half, 5}, {half, 2.5}} {
			clk.advance(step.after)
			w1 := s.Candidates(req)[0]
			if w1.Worker != key(1, 0) || w1.VirtualBlocks != step.virtual || w1.Logit != 20+step.virtual {
				t.Fatalf("half-life %v: %+v has virtual %v logit %v, want %v and %v", half, w1.Worker,
					w1.VirtualBlocks, w1.Logit, step.virtual, 20+step.virtual)
			}
		}
		// A clock set back before the booking reads the booked 10 blocks,
		// never more (no negative decay).
		clk.advance(-10 * half)
		if v := s.Candidates(req)[0].VirtualBlocks; v != 10 {
			t.Fatalf("clock went back: virtual %v, want the booked 10", v)
		}
	}
}

// TestSpreadingForgets: an entry decayed below a thousandth of a block is
// dropped when another worker is booked, so the state stays small.
func TestSpreadingForgets(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	s, p := idleThree(spreading(time.Second), WithClock(clk.now))
	req := &schemas.RequestEvent{RequestID: "w", Model: "m", TokenIDs: p}
	s.Select(req) // w1: 10 virtual blocks
	s.Select(req) // w2: 10
	// 20 half-lives: 10 / 2^20 ≈ 9.5e-6 blocks left on w1 and w2, so
	// w3 (20) is below them (20.0000095) and is booked; booking it drops
	// both residues.
	clk.advance(20 * time.Second)
	if c, _ := s.Select(req); c.Worker != key(3, 0) {
		t.Fatalf("after decay, choice %v, want worker 3", c.Worker)
	}
	s.mu.Lock()
	_, w3 := s.spread.m[key(3, 0)]
	n := len(s.spread.m)
	s.mu.Unlock()
	if !w3 || n != 1 {
		t.Fatalf("%d entries (worker 3 booked: %v), want only worker 3's", n, w3)
	}
}
