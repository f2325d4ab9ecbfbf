// Command evictstudy replays the value harness's workloads at the shared
// L3 store under LRU, Belady and the best-known online eviction policies,
// and prints each policy's prefix-hit tokens and share of the Belady −
// LRU gap at ¼×, 1× and 4× the harness's L3 (Markdown, to stdout):
//
//	go run ./loadtest/evictstudy/cmd/evictstudy \
//	    --trace ../shared/data/mooncake_synthetic_trace.jsonl [--trace /tmp/trace12k.jsonl]
//
// The synthetic sessions (workload.Generate, seed 1: the harness's
// HINTSTREAM_VALUE_SYNTHETIC workload) are always played; --sessions N
// also plays N of them, for a store under pressure. Each workload's table
// is followed by its reuse profile at the 1× capacity. --sweep plays the
// tunable policies over a range of their constants instead.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/loadtest/evictstudy"
	"github.com/hintstream/hintstream/whatif/workload"
)

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var traces paths
	flag.Var(&traces, "trace", "a Mooncake-format trace to play (repeatable)")
	capacity := flag.Int("capacity", evictstudy.DefaultCapacity, "the 1× L3 capacity, in pages")
	seed := flag.Uint64("seed", 1, "seed of the synthetic sessions")
	sweep := flag.Bool("sweep", false, "play the tunable policies over a range of their constants instead (evictstudy.SweepMakers)")
	var sessions counts
	flag.Var(&sessions, "sessions", "also play this many synthetic sessions (repeatable; the harness plays the default, 50)")
	flag.Parse()
	makers := evictstudy.Makers()
	if *sweep {
		makers = evictstudy.SweepMakers()
	}
	if err := run(traces, sessions, *capacity, *seed, makers); err != nil {
		fmt.Fprintln(os.Stderr, "evictstudy:", err)
		os.Exit(1)
	}
}

type counts []int

func (c *counts) String() string { return fmt.Sprint(*c) }
func (c *counts) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("sessions %q: want a positive count", v)
	}
	*c = append(*c, n)
	return nil
}

func run(traces []string, sessions []int, capacity int, seed uint64, makers []evictstudy.Maker) error {
	type named struct {
		name string
		w    *workload.Workload
	}
	var ws []named
	for _, p := range traces {
		w, err := workload.LoadTrace(p, workload.TraceOptions{})
		if err != nil {
			return err
		}
		ws = append(ws, named{p, w})
	}
	syn, err := workload.Generate(workload.SyntheticConfig{Seed: seed})
	if err != nil {
		return err
	}
	ws = append(ws, named{fmt.Sprintf("synthetic sessions (seed %d)", seed), syn})
	for _, n := range sessions {
		w, err := workload.Generate(workload.SyntheticConfig{Seed: seed, Sessions: n})
		if err != nil {
			return err
		}
		ws = append(ws, named{fmt.Sprintf("synthetic sessions (seed %d, %d sessions)", seed, n), w})
	}
	var caps []int
	for _, s := range evictstudy.DefaultScales {
		caps = append(caps, max(int(s*float64(capacity)), 1))
	}
	for _, n := range ws {
		a, err := evictstudy.FromWorkload(n.w)
		if err != nil {
			return err
		}
		st, err := evictstudy.RunStudy(n.name, a, caps, makers)
		if err != nil {
			return err
		}
		fmt.Println(st.Markdown())
		fmt.Println(evictstudy.NewProfile(a, capacity, 4).Markdown())
	}
	return nil
}
