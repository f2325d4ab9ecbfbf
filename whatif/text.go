package whatif

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Text writes the terminal tables: what to turn on, per point the runs
// (both bounds on every row, and why equal rows are equal), the lost
// savings of each policy by cause and by mechanism, and, with a sweep,
// the saving against the swept dimension.
func (r *Report) Text(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d requests (%d conversations, %d next turns), %s prompt tokens over %.0f s",
		r.Source, r.Requests, r.Conversations, r.NextTurns, tokens(float64(r.PromptTokens)), r.DurationS)
	if r.Skipped > 0 {
		fmt.Fprintf(w, "; %d bad lines skipped (first: %s)", r.Skipped, r.FirstSkipped)
	}
	fmt.Fprintf(w, "\nreusable share of prompt tokens with unbounded caches: %s\n", pct(r.Reusable))
	if r.Signals != nil {
		r.Signals.text(w)
	}
	if r.Observed != nil {
		r.Observed.text(w, r)
	}
	for _, p := range r.Points {
		if s := p.Summary; s != nil {
			fmt.Fprintf(w, "\n%swhat to turn on: %s\n  hintstream run flags: %s\n", labelPrefix(p.Label), s.sentence(), joinOr(s.RunFlags, "none (the defaults)"))
			for _, b := range s.Besides {
				fmt.Fprintf(w, "  and: %s\n", b)
			}
			if s.Better != "" {
				fmt.Fprintf(w, "  with a store setting on top, %q saves more\n", s.Better)
			}
		}
	}
	if s := r.worthSentence(); s != "" {
		fmt.Fprintf(w, "%s\n", s)
	}
	for _, p := range r.Points {
		if err := p.text(w); err != nil {
			return err
		}
	}
	if r.Sweep != nil && len(r.Points) > 0 {
		fmt.Fprintf(w, "\nprefill saved against %s:\n", sweepTitle(r.Sweep.Dim))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "run\t")
		for _, l := range r.Sweep.Labels {
			fmt.Fprintf(tw, "%s\t", l)
		}
		fmt.Fprintln(tw)
		for k, run := range r.Points[0].Runs {
			fmt.Fprintf(tw, "%s\t", run.Name)
			for _, p := range r.Points {
				if k < len(p.Runs) {
					fmt.Fprintf(tw, "%s\t", pct(p.Runs[k].SavingShare))
				}
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\n%d requests a second (%.1f s)\n", int(r.RequestsPerS), r.ElapsedS)
	return err
}

// text writes one point's tables.
func (p Point) text(w io.Writer) error {
	c := p.Cluster
	fmt.Fprintf(w, "\n%scluster: %d workers × %d device blocks, L3 %s (%d pages), %s, α %.2f, %d KV bytes/token, %d-token blocks\n",
		labelPrefix(p.Label), c.Workers, c.DeviceBlocks, FormatBytes(float64(c.L3Bytes)), p.L3Pages, bandwidth(c.L3Bandwidth),
		c.Alpha, c.KVBytesPerToken, c.BlockSize)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tprefill saved\tof prompt\tof clairvoyant bound\tof reachable bound\tof oracle\tprefetches\twasted prefetch\tpins\ttime\t")
	for _, run := range p.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%.1f s\t\n", run.Name+peerMark(run), tokens(run.Saving), pct(run.SavingShare),
			pct(run.OfBound), pct(run.OfReachable), pct(run.OfOracle), run.Prefetches, FormatBytes(run.WastedPrefetchBytes), run.Pins,
			run.ElapsedS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, run := range p.Runs {
		if run.Source != "" {
			fmt.Fprintf(w, "  * %s: peer, after %s\n", run.Name, run.Source)
		}
	}
	for _, run := range p.Runs {
		if run.Note != "" {
			fmt.Fprintf(w, "  = %s: %s\n", run.Name, run.Note)
		}
	}
	fmt.Fprintln(w, "\nsaving missed against the clairvoyant bound, by cause (prefill tokens):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tno wake-up\twrong worker\tload unfinished\tevicted\tpin lapsed\trest\ttotal\t")
	for _, run := range p.Runs {
		if l := run.Lost; l != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", run.Name, tokens(l.NoWakeup), tokens(l.WrongWorker),
				tokens(l.LoadNotFinished), tokens(l.EvictedBeforeUse), tokens(l.PinLapsed), tokens(l.Rest), tokens(l.Total))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !p.hasMechanism() {
		return nil
	}
	fmt.Fprintln(w, "\nsaving missed against the clairvoyant bound, by mechanism (prefill tokens):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tretention\tplacement\ttiming\twrong worker\tno signal\ttotal\t")
	for _, run := range p.Runs {
		if m := run.Mechanism; m != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", run.Name, tokens(m.Retention), tokens(m.Placement), tokens(m.Timing),
				tokens(m.WrongWorker), tokens(m.NoSignal), tokens(m.Total))
		}
	}
	return tw.Flush()
}

func (p Point) hasMechanism() bool {
	for _, r := range p.Runs {
		if r.Mechanism != nil {
			return true
		}
	}
	return false
}

func peerMark(r RunResult) string {
	if r.Kind == "peer" {
		return " *"
	}
	return ""
}

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	out := s[0]
	for _, x := range s[1:] {
		out += " " + x
	}
	return out
}
