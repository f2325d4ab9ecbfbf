package whatif

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hintstream/hintstream/whatif/simulate"
)

// Num is a ratio: NaN (nothing to divide by) is written as JSON null.
type Num float64

// MarshalJSON writes NaN and infinities as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// Report is what Run measured, for the terminal (Text), scripts (JSON)
// and people (WriteHTML).
type Report struct {
	Source        string  `json:"source"`
	Requests      int     `json:"requests"`
	Conversations int     `json:"conversations"`
	NextTurns     int     `json:"next_turns"`
	PromptTokens  int64   `json:"prompt_tokens"`
	DurationS     float64 `json:"duration_s"`
	// Skipped bad input (--skip-bad), and the first such line's error.
	Skipped      int    `json:"skipped_bad"`
	FirstSkipped string `json:"first_skipped,omitempty"`
	// Reusable is the share of prompt tokens unbounded caches would not
	// recompute (Mooncake FAST'25 Table 2's "Cache Ratio").
	Reusable Num     `json:"reusable_share_unbounded"`
	Cluster  Cluster `json:"cluster"`
	Sweep    *Sweep  `json:"sweep,omitempty"`
	Points   []Point `json:"points"`
	// Observed is the real cluster's device hit share on the same
	// requests, from its KV events (--from-streams only): a calibration
	// check for the simulated runs' device_hit_tokens.
	Observed *Observed `json:"observed,omitempty"`
	// ElapsedS is the wall time; RequestsPerS the requests played per
	// second of it (each sweep point counting the trace once).
	ElapsedS     float64 `json:"elapsed_s"`
	RequestsPerS float64 `json:"requests_per_s"`
}

// Point is one cluster (the only one without a sweep) and every run on it.
type Point struct {
	Label   string      `json:"label,omitempty"`
	Cluster Cluster     `json:"cluster"`
	L3Pages int         `json:"l3_pages"`
	Runs    []RunResult `json:"runs"`
	// HeldPrompts is the most requests' hashes held at once: those in
	// flight or announced, not the trace.
	HeldPrompts int `json:"held_prompts"`
}

// RunResult is one run: "off" (no hints), a "policy" through the decision
// engine, the next-turn "oracle", or the clairvoyant "bound".
type RunResult struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Cost is recomputed + α × L3-loaded tokens; Saving the no-hints
	// run's cost minus this one's; SavingShare that over prompt tokens;
	// OfBound and OfOracle over the bound's and oracle's savings.
	Cost        float64 `json:"cost"`
	Saving      float64 `json:"saving"`
	SavingShare Num     `json:"saving_share"`
	OfBound     Num     `json:"of_bound"`
	OfOracle    Num     `json:"of_oracle"`

	DeviceHitTokens  int64 `json:"device_hit_tokens"`
	L3HitTokens      int64 `json:"l3_hit_tokens"`
	RecomputedTokens int64 `json:"recomputed_tokens"`

	Prefetches          int     `json:"prefetches"`
	PrefetchedBytes     float64 `json:"prefetched_bytes"`
	WastedPrefetchBytes float64 `json:"wasted_prefetch_bytes"`
	Pins                int     `json:"pins"`
	Renewals            int     `json:"renewals"`

	// Lost is the saving missed against the bound, by cause (policies
	// and the oracle).
	Lost           *simulate.Lost `json:"lost,omitempty"`
	SavingOverTime []TimePoint    `json:"saving_over_time,omitempty"`
	ElapsedS       float64        `json:"elapsed_s"`
}

// TimePoint is the saving accumulated by AtS seconds into the trace.
type TimePoint struct {
	AtS    float64 `json:"at_s"`
	Saving float64 `json:"saving"`
}

// WriteJSON writes r as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func pct(v Num) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "–"
	}
	return strconv.FormatFloat(100*float64(v), 'f', 1, 64) + "%"
}

func tokens(v float64) string {
	neg := v < 0
	s := strconv.FormatInt(int64(math.Abs(math.Round(v))), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Text writes the terminal tables: per point the runs, the lost savings
// of each policy and, with a sweep, the saving against the swept simulate.
func (r *Report) Text(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d requests (%d conversations, %d next turns), %s prompt tokens over %.0f s",
		r.Source, r.Requests, r.Conversations, r.NextTurns, tokens(float64(r.PromptTokens)), r.DurationS)
	if r.Skipped > 0 {
		fmt.Fprintf(w, "; %d bad lines skipped (first: %s)", r.Skipped, r.FirstSkipped)
	}
	fmt.Fprintf(w, "\nreusable share of prompt tokens with unbounded caches: %s\n", pct(r.Reusable))
	if r.Observed != nil {
		r.Observed.text(w, r)
	}
	for _, p := range r.Points {
		c := p.Cluster
		fmt.Fprintf(w, "\n%scluster: %d workers × %d device blocks, L3 %s (%d pages), %s, α %.2f, %d KV bytes/token, %d-token blocks\n",
			labelPrefix(p.Label), c.Workers, c.DeviceBlocks, FormatBytes(float64(c.L3Bytes)), p.L3Pages, bandwidth(c.L3Bandwidth),
			c.Alpha, c.KVBytesPerToken, c.BlockSize)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "run\tprefill saved\tof prompt\tof bound\tof oracle\tprefetches\twasted prefetch\tpins\t")
		for _, run := range p.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t\n", run.Name, tokens(run.Saving), pct(run.SavingShare),
				pct(run.OfBound), pct(run.OfOracle), run.Prefetches, FormatBytes(run.WastedPrefetchBytes), run.Pins)
		}
		if err := tw.Flush(); err != nil {
			return err
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
				fmt.Fprintf(tw, "%s\t", pct(p.Runs[k].SavingShare))
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

func labelPrefix(l string) string {
	if l == "" {
		return ""
	}
	return l + ": "
}

func bandwidth(b float64) string {
	if b == 0 {
		return "instant L3 loads"
	}
	return strconv.FormatFloat(b/1e9, 'g', 4, 64) + " GB/s L3 link"
}

func sweepTitle(dim string) string {
	switch dim {
	case SweepL3:
		return "L3 capacity"
	case SweepDevice:
		return "device blocks per worker"
	case SweepBandwidth:
		return "L3 bandwidth"
	}
	return dim
}
