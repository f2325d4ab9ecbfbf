// Command targets plays every hintstream policy and every peer on each
// workload it has, at the whatif default L3 and at an eighth of it, and
// prints the targets table of loadtest/RESULTS.md ("Targets on agentic
// traffic"): hintstream's best row against the clairvoyant bound, the
// hint-reachable bound (and the part of it that keeping L3 pages alone
// reaches) and the best peer, with every retention row beside it.
//
//	go run ./loadtest/cmd/targets --trace /work/shared/data/mooncake_synthetic_trace.jsonl
//
// The workloads: the Mooncake-format trace (--trace), the synthetic
// agentic sessions (workload.Generate, seed 1; and --many-sessions of them), and
// an agentic-coding shape (agenticShape): long prompts growing turn by
// turn, mostly tool calls with short gaps, human turns with long ones;
// and the long-context agent profile (workload.GenerateAgent, whatif
// --workload agent; --agent-conversations of it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command and returns its exit code: 1 on any error, which
// it prints to stderr.
func cli(args []string, stdout, stderr io.Writer) int {
	if err := run(context.Background(), args, stdout); err != nil {
		fmt.Fprintln(stderr, "targets:", err)
		return 1
	}
	return 0
}

// agenticShape is a long-context coding agent's traffic built from the
// published per-request statistics of real agentic-coding sessions (not
// from any one trace): a 15K-token tools-and-system prefix shared by
// every conversation, prompts growing by a tool result a turn to a
// median near 110K tokens, about 85% of turns ending in a tool call
// (log-normal tool time, median 8 s, P90 near 70 s: sigma 1.69), the
// human's turn after the rest (exponential, median 210 s: mean 303 s),
// 19 to 101 turns a conversation, outputs of 220 tokens. Each turn says
// how it ends (finish_reason), so next turns are signalled as whatif's
// defaults say: a tool call's at its predicted or actual end, a human's
// not at all.
func agenticShape(seed uint64, sessions int) (*workload.Workload, error) {
	return workload.Generate(workload.SyntheticConfig{Seed: seed, Sessions: sessions, SessionInterval: 45 * time.Second,
		MinTurns: 19, MaxTurns: 101, ToolCallProb: 0.85, ToolTime: 8 * time.Second, ToolTimeSigma: 1.69,
		ThinkTime: 303 * time.Second, SystemPromptTokens: 15360, FirstPromptTokens: 20480, PromptGrowth: 2048,
		OutputTokens: 220, Facts: true})
}

type job struct {
	name string
	w    *workload.Workload
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	trace := fs.String("trace", "", "Mooncake-format trace (empty: none)")
	agentic := fs.Int("agentic-sessions", 40, "conversations of the agentic-coding shape (0: none)")
	many := fs.Int("many-sessions", 1000, "sessions of the larger synthetic run (0: none)")
	agent := fs.Int("agent-conversations", 64, "conversations of the long-context agent profile (workload.GenerateAgent, seed 1; 0: none)")
	only := fs.String("only", "", "play only the workloads whose name holds this")
	rows := fs.String("policies", "", "rows to play, by name, separated by commas, opt-in ones too (default: every policy and peer)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var jobs []job
	if *trace != "" {
		tw, err := workload.LoadTrace(*trace, workload.TraceOptions{})
		if err != nil {
			return err
		}
		jobs = append(jobs, job{"Mooncake synthetic trace", tw})
	}
	sw, err := workload.Generate(workload.SyntheticConfig{Seed: 1})
	if err != nil {
		return err
	}
	jobs = append(jobs, job{"synthetic sessions", sw})
	if *many > 0 {
		mw, err := workload.Generate(workload.SyntheticConfig{Seed: 1, Sessions: *many})
		if err != nil {
			return err
		}
		jobs = append(jobs, job{fmt.Sprintf("synthetic sessions, %d", *many), mw})
	}
	if *agentic > 0 {
		aw, err := agenticShape(1, *agentic)
		if err != nil {
			return err
		}
		jobs = append(jobs, job{"agentic-coding shape", aw})
	}
	if *agent > 0 {
		gw, err := workload.GenerateAgent(workload.AgentConfig{Seed: 1, Conversations: *agent})
		if err != nil {
			return err
		}
		jobs = append(jobs, job{"agent profile", gw})
	}
	pols := append(simulate.Policies(), simulate.Peers()...)
	if *rows != "" {
		// Any row whatif has, the opt-in ones too.
		all := append(pols, simulate.OptInPolicies()...)
		var keep []simulate.Policy
		for _, n := range strings.Split(*rows, ",") {
			i := slices.IndexFunc(all, func(p simulate.Policy) bool { return p.Name == strings.TrimSpace(n) })
			if i < 0 {
				return fmt.Errorf("--policies: no row %q", n)
			}
			keep = append(keep, all[i])
		}
		pols = keep
	}
	for _, j := range jobs {
		if *only != "" && !strings.Contains(j.name, *only) {
			continue
		}
		for _, div := range []int{1, 8} {
			cfg := simulate.Config{Workload: j.w, TransferTime: true, L3Blocks: simulate.DefaultL3Blocks / div}
			start := time.Now()
			s, err := simulate.Simulate(ctx, cfg, pols)
			if err != nil {
				return fmt.Errorf("%s: %w", j.name, err)
			}
			table(out, fmt.Sprintf("%s, L3 %d pages", j.name, cfg.L3Blocks), pols, s, time.Since(start))
		}
	}
	return nil
}

func table(out io.Writer, name string, pols []simulate.Policy, s simulate.Simulation, took time.Duration) {
	st := s.Workload
	fmt.Fprintf(out, "### %s\n\n%d requests (%d conversations, %d tool calls), %d prompt tokens; played in %.1f s\n\n",
		name, st.Requests, st.Sessions, st.ToolCalls, st.PromptTokens, took.Seconds())
	fmt.Fprintln(out, "| row | saved | of clairvoyant | of reachable | pins | pinned keys | keys not resident | pins broken | L3 evictions | missed: retention | placement | timing | wrong worker | no signal |")
	fmt.Fprintln(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	bestH, bestP := -1, -1
	for i, m := range s.Policies {
		if pols[i].Peer != nil {
			if bestP < 0 || m.Saving > s.Policies[bestP].Saving {
				bestP = i
			}
		} else if bestH < 0 || m.Saving > s.Policies[bestH].Saving {
			bestH = i
		}
		mm := m.Mechanism
		if mm == nil {
			mm = &simulate.Mechanism{}
		}
		fmt.Fprintf(out, "| %s | %.0f | %s | %s | %d | %d | %d | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", m.Mode, m.Saving, share(m.Saving, s.Bound.Saving),
			share(m.Saving, s.Reachable.Saving), m.Pins, m.L3.PinnedKeys, m.L3.PinKeysMissing, m.L3.PinsBroken, m.L3.Evictions,
			mm.Retention, mm.Placement, mm.Timing, mm.WrongWorker, mm.NoSignal)
	}
	fmt.Fprintf(out, "| clairvoyant bound | %.0f | 100%% | %s |\n", s.Bound.Saving, share(s.Bound.Saving, s.Reachable.Saving))
	fmt.Fprintf(out, "| hint-reachable bound | %.0f | %s | 100%% |\n", s.Reachable.Saving, share(s.Reachable.Saving, s.Bound.Saving))
	fmt.Fprintf(out, "| ditto, keeping L3 pages alone | %.0f | %s | %s |\n\n", s.Reachable.Saving-s.Reachable.Placed,
		share(s.Reachable.Saving-s.Reachable.Placed, s.Bound.Saving), share(s.Reachable.Saving-s.Reachable.Placed, s.Reachable.Saving))
	if bestH >= 0 {
		h := s.Policies[bestH]
		ratio := "–"
		if bestP >= 0 && s.Policies[bestP].Saving > 0 {
			ratio = fmt.Sprintf("%.2f× %s", h.Saving/s.Policies[bestP].Saving, s.Policies[bestP].Mode)
		}
		fmt.Fprintf(out, "TARGET | %s | best %s | %s of clairvoyant | %s of reachable | vs best peer %s\n\n", name, h.Mode,
			share(h.Saving, s.Bound.Saving), share(h.Saving, s.Reachable.Saving), ratio)
	}
}

// share is a over b as a percentage, "–" when b is 0.
func share(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*a/b)
}
