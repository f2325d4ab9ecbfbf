// Command evictstudy replays the value harness's workloads at the shared
// L3 store under LRU, Belady and the best-known online eviction policies,
// and prints each policy's prefix-hit tokens and share of the Belady −
// LRU gap at ¼×, 1× and 4× the harness's L3 (Markdown, to stdout):
//
//	go run ./loadtest/evictstudy/cmd/evictstudy \
//	    --trace ../shared/data/mooncake_synthetic_trace.jsonl [--trace /tmp/trace12k.jsonl]
//
// The synthetic sessions (workload.Generate, seed 1: the harness's
// HINTSTREAM_VALUE_SYNTHETIC workload) are always played.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hintstream/hintstream/loadtest/evictstudy"
	"github.com/hintstream/hintstream/loadtest/workload"
)

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var traces paths
	flag.Var(&traces, "trace", "a Mooncake-format trace to play (repeatable)")
	capacity := flag.Int("capacity", evictstudy.DefaultCapacity, "the 1× L3 capacity, in pages")
	seed := flag.Uint64("seed", 1, "seed of the synthetic sessions")
	flag.Parse()
	if err := run(traces, *capacity, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "evictstudy:", err)
		os.Exit(1)
	}
}

func run(traces []string, capacity int, seed uint64) error {
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
	var caps []int
	for _, s := range evictstudy.DefaultScales {
		caps = append(caps, max(int(s*float64(capacity)), 1))
	}
	for _, n := range ws {
		a, err := evictstudy.FromWorkload(n.w)
		if err != nil {
			return err
		}
		st, err := evictstudy.RunStudy(n.name, a, caps, evictstudy.Makers())
		if err != nil {
			return err
		}
		fmt.Println(st.Markdown())
	}
	return nil
}
