package simulate

import (
	"context"
	"github.com/hintstream/hintstream/internal/race"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// refOverTime is the saving so far at n even steps of the workload's
// time, from whole per-request arrays: how the series was computed
// before Simulate folded it.
func refOverTime(w *workload.Workload, none, run []float64, n int) []SavingPoint {
	first, last := w.Requests[0].At, w.Requests[len(w.Requests)-1].At
	span := max(last-first, time.Millisecond)
	out := make([]SavingPoint, n)
	var sum float64
	i := 0
	for k := range n {
		until := first + time.Duration(float64(span)*float64(k+1)/float64(n))
		for i < len(w.Requests) && w.Requests[i].At <= until {
			sum += none[i] - run[i]
			i++
		}
		out[k] = SavingPoint{At: until - first, Saving: sum}
	}
	return out
}

// Simulate folds each request's results into running sums as soon as
// every run has played it, and its runs forget the request then. The
// lost-savings table and the saving over time must equal, to the bit,
// what per-request arrays kept to the end give (each run played alone,
// as Run does, keeping every request), and so must each run's totals:
// on random synthetic workloads and on a slice of the Mooncake trace,
// with every policy, small caches (evictions, lapsed pins) and with and
// without transfer time.
func TestFoldedResultsEqualPerRequestArrays(t *testing.T) {
	type tc struct {
		name string
		w    *workload.Workload
	}
	var cases []tc
	seeds, stretch, pols := uint64(4), 0, Policies()
	if race.Enabled { // the full case runs without -race (make test's sim pass)
		// Today's, today's + affinity and one peer, in
		// stretches of 128 events (several on every case).
		seeds, stretch = 2, 128
		pols = []Policy{Policies()[0], Policies()[5], Peers()[0]}
	}
	for seed := range seeds {
		w, err := workload.Generate(workload.SyntheticConfig{Seed: seed + 1, Sessions: 30 + int(seed)*10,
			MaxTurns: 6 + int(seed), ToolCallProb: 0.3 + 0.15*float64(seed)})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{"synthetic seed " + string(rune('1'+seed)), w})
	}
	tr, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 1200, Limit: 300})
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, tc{"Mooncake trace slice", tr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var lostSeen, announcedSeen bool
	for k, c := range cases {
		const points = 17
		cfg := Config{Workload: c.w, Workers: 3, DeviceBlocks: 40 + 16*k, L3Blocks: 80 + 32*k,
			TransferTime: k%2 == 0, L3Bandwidth: 2e9, TimePoints: points, stretch: stretch}
		s, err := Simulate(ctx, cfg, pols)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.HeldResults <= 0 {
			t.Fatalf("%s: runs held no request's results", c.name)
		}
		full, err := cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		pr, err := newPrompts(full)
		if err != nil {
			t.Fatal(err)
		}
		bound, hits, err := boundMode(full, pr)
		if err != nil {
			t.Fatal(err)
		}
		none, err := runMode(ctx, full, pr, ModeNoHints, nil)
		if err != nil {
			t.Fatal(err)
		}
		if none.Cost != s.NoHints.Cost || bound.Cost != s.Bound.Cost {
			t.Fatalf("%s: no hints %v/%v, bound %v/%v", c.name, none.Cost, s.NoHints.Cost, bound.Cost, s.Bound.Cost)
		}
		if len(none.PerRequestCost) != len(c.w.Requests) || len(s.NoHints.PerRequestCost) != 0 {
			t.Fatalf("%s: per-request arrays: alone %d, Simulate %d (want all, none)", c.name,
				len(none.PerRequestCost), len(s.NoHints.PerRequestCost))
		}
		if got, want := s.Bound.SavingOverTime, refOverTime(c.w, none.PerRequestCost, bound.PerRequestCost, points); !slices.Equal(got, want) {
			t.Fatalf("%s: bound's saving over time\n got %v\nwant %v", c.name, got, want)
		}
		announced := func(i int) bool { return c.w.Requests[i].HasWakeup }
		check := func(mode Mode, pol *Policy, got ModeResult) {
			alone, err := runMode(ctx, full, pr, mode, pol)
			if err != nil {
				t.Fatal(err)
			}
			if alone.Cost != got.Cost || alone.Prefetches != got.Prefetches || alone.Pins != got.Pins ||
				alone.WastedPrefetchBlocks != got.WastedPrefetchBlocks || alone.L3 != got.L3 {
				t.Fatalf("%s, %s: alone cost %v prefetches %d pins %d wasted %d L3 %+v; in Simulate %v %d %d %d %+v", c.name, mode,
					alone.Cost, alone.Prefetches, alone.Pins, alone.WastedPrefetchBlocks, alone.L3,
					got.Cost, got.Prefetches, got.Pins, got.WastedPrefetchBlocks, got.L3)
			}
			if want := lostSavings(alone, bound, none, hits, announced); want != got.Lost {
				t.Fatalf("%s, %s: folded lost savings\n got %+v\nwant %+v", c.name, mode, got.Lost, want)
			}
			if want := refOverTime(c.w, none.PerRequestCost, alone.PerRequestCost, points); !slices.Equal(got.SavingOverTime, want) {
				t.Fatalf("%s, %s: saving over time\n got %v\nwant %v", c.name, mode, got.SavingOverTime, want)
			}
			causes := 0
			for _, v := range []float64{got.Lost.NoWakeup, got.Lost.WrongWorker, got.Lost.LoadNotFinished,
				got.Lost.EvictedBeforeUse, got.Lost.PinLapsed, got.Lost.Rest} {
				if v != 0 {
					causes++
				}
			}
			lostSeen = lostSeen || causes >= 3
			announcedSeen = announcedSeen || got.Lost.Announced > 0 && got.Lost.AnnouncedRun != 0
		}
		check(ModeOracle, nil, s.Oracle)
		for i := range pols {
			check(Mode(pols[i].Name), &pols[i], s.Policies[i])
		}
	}
	if !lostSeen || !announcedSeen {
		t.Fatalf("no case lost savings on several causes (%v) or on announced turns (%v): the comparison shows nothing", lostSeen, announcedSeen)
	}
}

// Simulate's runs hold the results of the requests in flight across a
// stretch of events, not of the whole workload: on the whole Mooncake
// synthetic trace (3,993 requests, eight stretches), at most a fifth at
// once.
func TestSimulateHoldsResultsOfRequestsInFlightOnly(t *testing.T) {
	if race.Enabled {
		t.Skip("the whole trace: runs without -race (make test's sim pass)")
	}
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Events) < 8*simulateStretch {
		t.Fatalf("%d events: want at least 8 stretches", len(w.Events))
	}
	s, err := Simulate(context.Background(), Config{Workload: w, TimePoints: 5}, Policies()[:1])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("results held at most for %d requests of %d; prompts %d, pin keys %d", s.HeldResults, len(w.Requests), s.HeldPrompts, s.HeldPinKeys)
	if s.HeldResults <= 0 || s.HeldResults > len(w.Requests)/5 {
		t.Fatalf("runs held results of %d requests at once of %d, want some and at most a fifth", s.HeldResults, len(w.Requests))
	}
	// A request's pin keys are made at its response and dropped with its
	// prompt.
	if s.HeldPinKeys <= 0 || s.HeldPinKeys > s.HeldPrompts {
		t.Fatalf("pin keys of %d requests held at once, prompts of %d: want some, and no more than prompts", s.HeldPinKeys, s.HeldPrompts)
	}
	if s.Policies[0].Lost.Total == 0 || len(s.Policies[0].SavingOverTime) != 5 {
		t.Fatalf("lost %+v, saving over time %v: want a gap and 5 points", s.Policies[0].Lost, s.Policies[0].SavingOverTime)
	}
}
