package simulate

import (
	"context"
	"errors"
	"fmt"
	"github.com/hintstream/hintstream/internal/race"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// withoutIDs returns a copy of w whose requests hold no block ids, and a
// Config.IDs reading them back from w, counting its calls.
func withoutIDs(w *workload.Workload) (*workload.Workload, func(int) ([]uint64, error), *int) {
	c := *w
	c.Requests = slices.Clone(w.Requests)
	for i := range c.Requests {
		c.Requests[i].HashIDs = nil
	}
	calls := 0
	return &c, func(i int) ([]uint64, error) {
		calls++
		return slices.Clone(w.Requests[i].HashIDs), nil
	}, &calls
}

// untimed zeroes what differs between two plays of the same workload:
// the runs' wall times.
// The mechanism breakdowns are printed by value (a pointer would print
// its address).
func untimed(s Simulation) untimedSim {
	s.NoHints.Elapsed, s.Oracle.Elapsed, s.Bound.Elapsed, s.Hintstream.Elapsed = 0, 0, 0, 0
	s.Policies = slices.Clone(s.Policies)
	var mech []Mechanism
	for _, m := range []*ModeResult{&s.NoHints, &s.Oracle} {
		if m.Mechanism != nil {
			mech = append(mech, *m.Mechanism)
		}
		m.Mechanism = nil
	}
	for i := range s.Policies {
		s.Policies[i].Elapsed = 0
		if m := s.Policies[i].Mechanism; m != nil {
			mech = append(mech, *m)
		}
		s.Policies[i].Mechanism = nil
	}
	return untimedSim{s, mech}
}

type untimedSim struct {
	S    Simulation
	Mech []Mechanism
}

// A Simulate whose requests hold no ids, reading each request's back
// when it comes (Config.IDs) and dropping them once played, gives the
// same Simulation, field for field, as one holding every request's ids:
// on random synthetic workloads and on a slice of the Mooncake trace,
// with every policy, small caches and with and without transfer time.
// Each request's ids are read exactly three times (the bound's pass,
// the hint-reachable bound's, then the play), and none is held at the end.
func TestSimulateReadingIDsBackEqualsHoldingThem(t *testing.T) {
	type tc struct {
		name string
		w    *workload.Workload
	}
	var cases []tc
	seeds, limit, stretch, policies := uint64(4), 1200, simulateStretch, Policies()
	if race.Enabled { // the full case runs without -race (make test's sim pass)
		// Today's, today's + affinity (each path that reads a next turn's ids),
		// and one peer; stretches of 128 events.
		seeds, limit, stretch = 1, 400, 128
		policies = []Policy{Policies()[0], Policies()[5], Peers()[0]}
	}
	for seed := range seeds {
		w, err := workload.Generate(workload.SyntheticConfig{Seed: seed + 11, Sessions: 30 + int(seed)*10,
			MaxTurns: 6 + int(seed), ToolCallProb: 0.3 + 0.15*float64(seed)})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{"synthetic seed " + string(rune('1'+seed)), w})
	}
	tr, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Skip: 1500, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) < 2*stretch {
		t.Fatalf("trace slice has %d events: want several stretches", len(tr.Events))
	}
	cases = append(cases, tc{"Mooncake trace slice", tr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for k, c := range cases {
		cfg := Config{Workload: c.w, Workers: 3, DeviceBlocks: 40 + 16*k, L3Blocks: 80 + 32*k,
			TransferTime: k%2 == 0, L3Bandwidth: 2e9, TimePoints: 13, stretch: stretch}
		held, err := Simulate(ctx, cfg, policies)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var calls *int
		cfg.Workload, cfg.IDs, calls = withoutIDs(c.w)
		read, err := Simulate(ctx, cfg, policies)
		if err != nil {
			t.Fatalf("%s, ids read back: %v", c.name, err)
		}
		if held.NoHints.Cost == held.Bound.Cost || held.Policies[0].Prefetches == 0 {
			t.Fatalf("%s: no hints costs the bound (%v) or no prefetch: the comparison shows nothing", c.name, held.Bound.Cost)
		}
		// Printed, as NaN (an accuracy with nothing to measure) is not
		// equal to itself; %v prints floats exactly and maps sorted.
		if a, b := fmt.Sprintf("%+v", untimed(held)), fmt.Sprintf("%+v", untimed(read)); a != b {
			k := 0
			for k < min(len(a), len(b)) && a[k] == b[k] {
				k++
			}
			t.Fatalf("%s: reading ids back changed the simulation at %q: held %q, read %q", c.name,
				a[max(k-200, 0):k], a[k:min(k+80, len(a))], b[k:min(k+80, len(b))])
		}
		if n := len(c.w.Requests); *calls != 3*n {
			t.Fatalf("%s: ids read %d times for %d requests, want %d (the bound's pass, the hint-reachable bound's and the play's)", c.name, *calls, n, 3*n)
		}
		for i, r := range cfg.Workload.Requests {
			if r.HashIDs != nil {
				t.Fatalf("%s: request %d's ids still held after the play", c.name, i)
			}
		}
	}
}

// A failing or short read of a request's ids fails Simulate with an
// error naming the request, not a play of an empty prompt.
func TestSimulateFailsOnIDsItCannotReadBack(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	gone := errors.New("trace gone")
	for _, c := range []struct {
		name string
		ids  func(i int) ([]uint64, error)
		want string
	}{
		{"read fails", func(i int) ([]uint64, error) {
			if i == 150 {
				return nil, gone
			}
			return slices.Clone(w.Requests[i].HashIDs), nil
		}, "request 150's block ids: trace gone"},
		{"too few ids", func(i int) ([]uint64, error) {
			if i == 77 {
				return w.Requests[i].HashIDs[:1], nil
			}
			return slices.Clone(w.Requests[i].HashIDs), nil
		}, "request 77's block ids: 1 ids cannot hold"},
	} {
		c2, _, _ := withoutIDs(w)
		_, err := Simulate(context.Background(), Config{Workload: c2, IDs: c.ids}, Policies()[:1])
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}
