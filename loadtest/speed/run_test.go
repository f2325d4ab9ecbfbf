package speed

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Two programs take turns of slice, with nothing in the gaps; each gets
// its count, numbered in order; one program takes every tick.
func TestScheduleTakesTurns(t *testing.T) {
	const period, slice, gap = time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond
	ticks := schedule(2, 12, period, slice, gap)
	if len(ticks) != 24 {
		t.Fatalf("%d ticks, want 24", len(ticks))
	}
	next := [2]int{}
	for i, tk := range ticks {
		phase := tk.at % (2 * (slice + gap))
		owner := int(phase / (slice + gap))
		if phase-time.Duration(owner)*(slice+gap) >= slice {
			t.Fatalf("tick %d at %v falls in a gap", i, tk.at)
		}
		if tk.side != owner || tk.n != next[tk.side] {
			t.Fatalf("tick %d at %v: side %d n %d, want side %d n %d", i, tk.at, tk.side, tk.n, owner, next[owner])
		}
		next[tk.side]++
		if i > 0 && tk.at <= ticks[i-1].at {
			t.Fatalf("tick %d at %v not after %v", i, tk.at, ticks[i-1].at)
		}
	}
	// Side 0's first turn is ticks 0–4 ms, side 1's 10–14 ms.
	if ticks[4].side != 0 || ticks[5].side != 1 || ticks[5].at != 10*time.Millisecond {
		t.Fatalf("turns: %+v", ticks[:6])
	}
	one := schedule(1, 7, period, slice, gap)
	for i, tk := range one {
		if tk.side != 0 || tk.n != i || tk.at != time.Duration(i)*period {
			t.Fatalf("single program tick %d: %+v", i, tk)
		}
	}
}

// A short pair at 200/s: the floor and hintstream each get and answer
// every one of their wake-ups and none of the other's, in their turns.
func TestPairSmall(t *testing.T) {
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := Pair(context.Background(), LatencyConfig{Target: TargetFloor, Binary: bins.Floor, NATSURL: srv.URL(),
		Rate: 200, Duration: time.Second, Warmup: 250 * time.Millisecond, Workers: 3, Slice: 50 * time.Millisecond},
		Program{Target: TargetHintstream, Binary: bins.Hintstream})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []Target{TargetFloor, TargetHintstream} {
		r := res[k]
		t.Logf("%s: p50 %v p99 %v, sent %d received %d, send rate %.0f/s, CPU %v per wake-up",
			r.Target, r.P50, r.P99, r.Sent, r.Received, r.SendRate, r.CPUPerWakeup)
		if r.Target != want || r.Sent != 200 || r.Received != 200 || r.Lost != 0 || r.Duplicates != 0 {
			t.Fatalf("%d: %s sent %d received %d lost %d dups %d", k, r.Target, r.Sent, r.Received, r.Lost, r.Duplicates)
		}
		// Within its turns a program gets the whole rate: 200/s, not the
		// 100/s its share of the run's time would give.
		if r.SendRate < 150 || r.SendRate > 250 || r.SendLag.Count() != 200 || r.CPUPerWakeup <= 0 {
			t.Fatalf("%s: send rate %.0f/s in its turns, %d send lags, CPU %v", r.Target, r.SendRate, r.SendLag.Count(), r.CPUPerWakeup)
		}
	}
	// 200 measured and 50 warm-up wake-ups of its own; the floor's 250
	// are on a subject hintstream does not read.
	if n := sumFamily(res[1].Counters, "hintstream_hints_sent_total"); n < 250 || n >= 500 {
		t.Fatalf("hintstream's counters say %v hints sent, want its own 250", res[1].Counters)
	}
}

func TestPairConfigErrors(t *testing.T) {
	hs := Program{Binary: "x"}
	if _, err := Pair(context.Background(), LatencyConfig{Binary: "x"}, hs); !errors.Is(err, ErrConfig) {
		t.Fatalf("two hintstreams: %v", err)
	}
	if _, err := Pair(context.Background(), LatencyConfig{Binary: "x", Target: TargetFloor}, Program{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no second binary: %v", err)
	}
	if _, err := Pair(context.Background(), LatencyConfig{Binary: "x", Target: TargetFloor, Gap: -1}, hs); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative gap: %v", err)
	}
}
