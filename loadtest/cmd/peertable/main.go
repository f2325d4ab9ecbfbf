// Command peertable plays every hintstream policy and every peer
// (simulate.Policies and simulate.Peers) on each workload it has, at the
// whatif default cluster, and prints the peer table of loadtest/RESULTS.md:
// each row's prefill saved, its share of the clairvoyant and the
// hint-reachable bound's saving, and hintstream's best row against the
// best peer as a ratio of prefill saved.
//
//	gunzip -c testdata/data/mooncake_synthetic_trace.jsonl.gz > /tmp/syn.jsonl
//	go run ./loadtest/cmd/peertable --trace /tmp/syn.jsonl
//
// The workloads: the trace (--trace, Mooncake format), the synthetic
// agentic sessions (workload.Generate, seed 1) at the default device size
// and at --small-device blocks (the sessions fit a default device, which
// leaves no hint anything to do), the forked workload
// (workload.GenerateForked, seed 1), and --many-sessions synthetic
// sessions (seed 1), enough to fill the L3 so that pins and eviction
// order matter, and the long-context coding-agent profile
// (workload.GenerateAgent, seed 1; --agent 0: none).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "peertable:", err)
		os.Exit(1)
	}
}

type job struct {
	name string
	w    *workload.Workload
	cfg  simulate.Config
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("peertable", flag.ContinueOnError)
	trace := fs.String("trace", "", "Mooncake-format trace (required)")
	small := fs.Int("small-device", 64, "device blocks per worker of the sessions' second run")
	many := fs.Int("many-sessions", 1000, "sessions of the third synthetic run, enough for the L3 to evict (0: none)")
	only := fs.String("only", "", "play only the workloads whose name holds this")
	agent := fs.Int("agent", 64, "conversations of the long-context coding-agent profile (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *trace == "" {
		return fmt.Errorf("--trace is required")
	}
	if *small <= 0 {
		return fmt.Errorf("--small-device %d: want > 0", *small)
	}
	tw, err := workload.LoadTrace(*trace, workload.TraceOptions{})
	if err != nil {
		return err
	}
	sw, err := workload.Generate(workload.SyntheticConfig{Seed: 1})
	if err != nil {
		return err
	}
	fw, err := workload.GenerateForked(workload.ForkedConfig{Seed: 1})
	if err != nil {
		return err
	}
	var mw *workload.Workload
	if *many > 0 {
		if mw, err = workload.Generate(workload.SyntheticConfig{Seed: 1, Sessions: *many}); err != nil {
			return err
		}
	}
	var aw *workload.Workload
	if *agent > 0 {
		if aw, err = workload.GenerateAgent(workload.AgentConfig{Seed: 1, Conversations: *agent}); err != nil {
			return err
		}
	}
	base := simulate.Config{TransferTime: true}
	jobs := []job{
		{"Mooncake synthetic trace (" + *trace + ")", tw, base},
		{"synthetic sessions", sw, base},
		{fmt.Sprintf("synthetic sessions, %d device blocks", *small), sw, with(base, func(c *simulate.Config) { c.DeviceBlocks = *small })},
		{"forked sessions", fw, base},
	}
	if mw != nil {
		jobs = append(jobs, job{fmt.Sprintf("synthetic sessions, %d of them", *many), mw, base})
	}
	if aw != nil {
		jobs = append(jobs, job{fmt.Sprintf("agent profile, %d conversations", *agent), aw, base},
			job{fmt.Sprintf("agent profile, %d conversations, L3 an eighth", *agent), aw,
				with(base, func(c *simulate.Config) { c.L3Blocks = simulate.DefaultL3Blocks / 8 })})
	}
	pols := append(simulate.Policies(), simulate.Peers()...)
	for _, j := range jobs {
		if *only != "" && !strings.Contains(j.name, *only) {
			continue
		}
		j.cfg.Workload = j.w
		start := time.Now()
		s, err := simulate.Simulate(ctx, j.cfg, pols)
		if err != nil {
			return fmt.Errorf("%s: %w", j.name, err)
		}
		table(out, j.name, pols, s, time.Since(start))
	}
	return nil
}

func with(c simulate.Config, f func(*simulate.Config)) simulate.Config { f(&c); return c }

func table(out io.Writer, name string, pols []simulate.Policy, s simulate.Simulation, took time.Duration) {
	prompt := float64(s.NoHints.PromptTokens)
	reach := s.NoHints.Cost - s.Reachable.Cost
	fmt.Fprintf(out, "### %s\n\n%d requests, %.0f prompt tokens; %d rows played in %.1f s\n\n", name, s.NoHints.Requests, prompt, len(pols)+3, took.Seconds())
	fmt.Fprintln(out, "| row | kind | prefill saved | share of prompt tokens | of the clairvoyant bound's | of the hint-reachable bound's |")
	fmt.Fprintln(out, "| --- | --- | ---: | ---: | ---: | ---: |")
	bestH, bestP := -1, -1
	for i, m := range s.Policies {
		kind := "hintstream"
		switch {
		case pols[i].Peer != nil:
			kind = "peer: " + pols[i].Peer.Source
			if bestP < 0 || m.Saving > s.Policies[bestP].Saving {
				bestP = i
			}
		case pols[i].L3Eviction != "":
			kind = "hintstream on " + pols[i].L3Eviction
			fallthrough
		default:
			if bestH < 0 || m.Saving > s.Policies[bestH].Saving {
				bestH = i
			}
		}
		fmt.Fprintf(out, "| %s | %s | %.0f | %s | %s | %s |\n", m.Mode, kind, m.Saving, pct(m.Saving/prompt),
			pct(m.Saving/s.Bound.Saving), pct(m.Saving/reach))
	}
	fmt.Fprintf(out, "| clairvoyant bound | bound | %.0f | %s | 100%% | |\n", s.Bound.Saving, pct(s.Bound.Saving/prompt))
	fmt.Fprintf(out, "| hint-reachable bound | bound | %.0f | %s | %s | 100%% |\n\n", reach, pct(reach/prompt), pct(reach/s.Bound.Saving))
	if bestH >= 0 && bestP >= 0 {
		h, p := s.Policies[bestH], s.Policies[bestP]
		fmt.Fprintf(out, "Best hintstream row: **%s**, %s of prompt tokens; best peer: **%s**, %s: hintstream's best saves **%s** the best peer's prefill.\n\n",
			h.Mode, pct(h.Saving/prompt), p.Mode, pct(p.Saving/prompt), times(h.Saving, p.Saving))
	}
}

func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}

func times(a, b float64) string {
	switch {
	case b <= 0 && a > 0:
		return "more than (the peer saves nothing)"
	case b <= 0:
		return "as much as"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
