package whatif

import (
	"fmt"
	"math"
	"strconv"
)

// Summary is the answer a reader came for, at one point: which of
// hintstream's policies to turn on, what it gains over no hints and over
// the best policy one may already run, and the flags that turn it on.
type Summary struct {
	// Best is hintstream's policy with the largest saving on the store's
	// own (LRU) eviction: one `hintstream run` alone can turn on.
	Best   string  `json:"best"`
	Saving float64 `json:"saving"`
	// OfNoHints is Saving over the no-hints run's prefill cost: the share
	// of prefill it takes away.
	OfNoHints Num `json:"of_no_hints_prefill"`
	// BestPeer is the peer with the largest saving; OverPeer is Saving
	// over its saving (2 = twice the prefill saved).
	BestPeer       string  `json:"best_peer,omitempty"`
	BestPeerSaving float64 `json:"best_peer_saving"`
	OverPeer       Num     `json:"over_best_peer"`
	// RunFlags turn Best on in `hintstream run`; Besides is what it
	// needs that no flag of hintstream's sets.
	RunFlags []string `json:"run_flags"`
	Besides  []string `json:"besides,omitempty"`
	// Better names a hintstream policy on another L3 eviction order that
	// saves more (a store setting on top of the flags), if any.
	Better string `json:"better_with_store_setting,omitempty"`
}

// summarise fills p.Summary from its rows.
func (p *Point) summarise() {
	var best, peer, other *RunResult
	off := -1
	for i := range p.Runs {
		r := &p.Runs[i]
		switch {
		case r.Kind == "off":
			off = i
		case r.Kind == "peer":
			if peer == nil || r.Saving > peer.Saving {
				peer = r
			}
		case r.Kind != "policy":
		case r.Policy != nil && r.Policy.L3Eviction != "":
			if other == nil || r.Saving > other.Saving {
				other = r
			}
		case best == nil || r.Saving > best.Saving:
			best = r
		}
	}
	if best == nil {
		p.Summary = nil
		return
	}
	s := &Summary{Best: best.Name, Saving: best.Saving, OfNoHints: Num(math.NaN()), OverPeer: Num(math.NaN())}
	if off >= 0 {
		s.OfNoHints = Num(ratio(best.Saving, p.Runs[off].Cost))
	}
	if peer != nil {
		s.BestPeer, s.BestPeerSaving = peer.Name, peer.Saving
		s.OverPeer = Num(ratio(best.Saving, peer.Saving))
	}
	s.RunFlags, s.Besides = best.Policy.runFlags()
	if other != nil && other.Saving > best.Saving && !sameCost(other.Saving, best.Saving) {
		s.Better = other.Name
	}
	p.Summary = s
}

// sentence is the summary in words.
func (s *Summary) sentence() string {
	b := fmt.Sprintf("Turn on %q: it saves %s prefill tokens, %s of the prefill without hints", s.Best, tokens(s.Saving), pct(s.OfNoHints))
	switch {
	case s.BestPeer == "":
	case s.BestPeerSaving <= 0:
		b += fmt.Sprintf("; the best peer, %q, saves nothing (%s)", s.BestPeer, tokens(s.BestPeerSaving))
	default:
		b += fmt.Sprintf("; that is %s× what the best peer, %q, saves (%s)", strconv.FormatFloat(float64(s.OverPeer), 'f', 2, 64), s.BestPeer, tokens(s.BestPeerSaving))
	}
	return b + "."
}

// hintsWorth sets r.HintsWorthL3Bytes for an l3 sweep: the L3 that no
// hints (LRU alone) would need, beyond the smallest point's, to cost
// what hintstream's best policy costs there, with no hints' cost taken
// as linear between sweep points.
func (r *Report) hintsWorth() {
	r.HintsWorthL3Bytes, r.HintsWorthL3At = nil, 0
	if r.Sweep == nil || r.Sweep.Dim != SweepL3 || len(r.Points) == 0 {
		return
	}
	pts := sortedByL3(r.Points)
	first := pts[0]
	if first.Summary == nil {
		return
	}
	target := offCost(first) - first.Summary.Saving
	r.HintsWorthL3At = first.Cluster.L3Bytes
	if at, ok := reaches(pts, target); ok {
		w := int64(math.Round(at)) - first.Cluster.L3Bytes
		r.HintsWorthL3Bytes = &w
	}
}

// reaches is the first L3 capacity at which no hints' cost, linear
// between points, comes down to target.
func reaches(pts []Point, target float64) (float64, bool) {
	for k := range pts {
		c := offCost(pts[k])
		if sameCost(c, target) || c < target {
			if k == 0 {
				return float64(pts[0].Cluster.L3Bytes), true
			}
			c0, x0, x1 := offCost(pts[k-1]), float64(pts[k-1].Cluster.L3Bytes), float64(pts[k].Cluster.L3Bytes)
			if c0 == c {
				return x1, true
			}
			return x0 + (x1-x0)*(c0-target)/(c0-c), true
		}
	}
	return 0, false
}

func offCost(p Point) float64 {
	for _, r := range p.Runs {
		if r.Kind == "off" {
			return r.Cost
		}
	}
	return math.NaN()
}

// sortedByL3 is the points by L3 capacity (a sweep keeps the order given).
func sortedByL3(ps []Point) []Point {
	out := append([]Point(nil), ps...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Cluster.L3Bytes < out[j-1].Cluster.L3Bytes; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// worthSentence says what hints are worth in L3, or that the sweep
// never gets there.
func (r *Report) worthSentence() string {
	if r.Sweep == nil || r.Sweep.Dim != SweepL3 || r.HintsWorthL3At == 0 {
		return ""
	}
	at := FormatBytes(float64(r.HintsWorthL3At))
	if r.HintsWorthL3Bytes == nil {
		largest := sortedByL3(r.Points)[len(r.Points)-1].Cluster.L3Bytes
		return fmt.Sprintf("At %s of L3, no hints (LRU alone) does not reach hintstream's best saving at any point of the sweep: hints are worth more than the largest point, %s, less %s (%s of L3).",
			at, FormatBytes(float64(largest)), at, FormatBytes(float64(largest-r.HintsWorthL3At)))
	}
	return fmt.Sprintf("At %s of L3, no hints (LRU alone) needs %s to save what hintstream's best policy saves: hints are worth %s of L3.",
		at, FormatBytes(float64(r.HintsWorthL3At+*r.HintsWorthL3Bytes)), FormatBytes(float64(*r.HintsWorthL3Bytes)))
}
