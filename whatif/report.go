package whatif

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"

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
	Reusable Num `json:"reusable_share_unbounded"`
	// Signals say how next turns were announced, by which rule.
	Signals *Signals `json:"signals,omitempty"`
	Cluster Cluster  `json:"cluster"`
	Sweep   *Sweep   `json:"sweep,omitempty"`
	Points  []Point  `json:"points"`
	// Observed is the real cluster's device hit share on the same
	// requests, from its KV events (--from-streams only): a calibration
	// check for the simulated runs' device_hit_tokens.
	Observed *Observed `json:"observed,omitempty"`
	// ElapsedS is the wall time; RequestsPerS the requests played per
	// second of it (each sweep point counting the trace once).
	ElapsedS     float64 `json:"elapsed_s"`
	RequestsPerS float64 `json:"requests_per_s"`
	// HintsWorthL3Bytes (an l3 sweep): how much more L3 no hints (LRU
	// alone) needs to cost what hintstream's best policy costs at the
	// smallest point (HintsWorthL3At), interpolated between points;
	// omitted when no point of the sweep gets there.
	HintsWorthL3Bytes *int64 `json:"hints_worth_l3_bytes,omitempty"`
	HintsWorthL3At    int64  `json:"hints_worth_l3_at_bytes,omitempty"`
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
	// Summary is what to turn on here (nil without a hintstream policy).
	Summary *Summary `json:"summary,omitempty"`
}

// RunResult is one run: "off" (no hints), a "policy" through the decision
// engine, a "peer" (a policy an operator may run instead, Source citing
// it), the next-turn "oracle", the clairvoyant "bound" or the
// "reachable" one (the hint-reachable bound). Fields are only ever
// added: scripts read --json.
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
	// OfReachable is Saving over the hint-reachable bound's: what a
	// policy that only keeps L3 pages and places announced turns can
	// reach (a run with affinity can pass 100%).
	OfReachable Num `json:"of_reachable"`
	// Source cites a peer's policy (Kind "peer").
	Source string `json:"source,omitempty"`
	// Policy is what the row turns on, for the notes and the flags.
	Policy *Features `json:"policy,omitempty"`

	DeviceHitTokens  int64 `json:"device_hit_tokens"`
	L3HitTokens      int64 `json:"l3_hit_tokens"`
	RecomputedTokens int64 `json:"recomputed_tokens"`

	Prefetches          int     `json:"prefetches"`
	PrefetchedBytes     float64 `json:"prefetched_bytes"`
	WastedPrefetchBytes float64 `json:"wasted_prefetch_bytes"`
	Pins                int     `json:"pins"`
	Renewals            int     `json:"renewals"`
	// Mechanism is the saving missed against the clairvoyant bound by
	// mechanism (policy and peer rows, once the simulator measures it).
	Mechanism *Mechanism `json:"mechanism,omitempty"`
	// Note says why this row costs what an earlier one does, to the
	// token, from the facts (notes.go); empty when no earlier row does.
	Note string `json:"note,omitempty"`

	// Lost is the saving missed against the bound, by cause (policies
	// and the oracle).
	Lost           *simulate.Lost `json:"lost,omitempty"`
	SavingOverTime []TimePoint    `json:"saving_over_time,omitempty"`
	ElapsedS       float64        `json:"elapsed_s"`
}

// Mechanism is simulate.Mechanism in --json: the saving missed against
// the clairvoyant bound, each token charged to the first mechanism that
// would have recovered it; the rows add up to Total.
type Mechanism struct {
	Retention   float64 `json:"retention"`
	Placement   float64 `json:"placement"`
	Timing      float64 `json:"timing"`
	WrongWorker float64 `json:"wrong_worker"`
	NoSignal    float64 `json:"no_signal"`
	Total       float64 `json:"total"`
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
