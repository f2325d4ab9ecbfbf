package evictstudy

import (
	"fmt"
	"strings"
	"time"

	"github.com/hintstream/hintstream/whatif/cluster"
)

// DefaultCapacity is the harness's L3 in pages (cluster.DefaultL3Blocks,
// which loadtest/value and whatif take as their default).
const DefaultCapacity = cluster.DefaultL3Blocks

// DefaultScales are the capacities studied, as multiples of
// DefaultCapacity.
var DefaultScales = []float64{0.25, 1, 4}

// Names of the two reference policies in Makers.
const (
	NameLRU    = "LRU (today)"
	NameBelady = "Belady (clairvoyant)"
	// NameNextTurnPins is not online either: see NextTurnPins.
	NameNextTurnPins = "LRU + oracle next-turn pins (50%)"
)

// Makers returns the policies of the study: the two references, then
// the online ones with their published defaults.
func Makers() []Maker {
	return []Maker{
		{NameLRU, NewLRU},
		{NameBelady, NewBelady},
		{"ARC", NewARC},
		{"2Q", NewTwoQ},
		{"SLRU (80% protected)", NewSLRU},
		{"S3-FIFO (to main after 2 uses)", NewS3FIFO(DefaultS3Threshold)},
		{"S3-FIFO (to main after 1 use)", NewS3FIFO(1)},
		{"LFU, half-life 1 min", NewLFUDecay(time.Minute)},
		{"LFU, half-life 10 min", NewLFUDecay(10 * time.Minute)},
		{"TinyLFU admission + LRU", NewTinyLFU},
		{"W-TinyLFU", NewWTinyLFU},
		{"LHD (hit density by uses and age)", NewLHD},
		{"LHD (by uses, branching and age)", NewLHDBranches},
		{"expected next use (own mean gap)", NewNextUse},
		{"LRU + session pins (50%, learned p90 gap)", NewSessionPins(DefaultPinShare)},
		{NameNextTurnPins, NewNextTurnPins(DefaultPinShare)},
	}
}

// SweepMakers returns variants of the tunable online policies over a
// range of their constants. Choosing the best of them on the workload it
// is measured on fits the constants to that workload, so the best of the
// sweep is an optimistic bound on what the family could reach, not a
// candidate.
func SweepMakers() []Maker {
	ms := []Maker{{NameLRU, NewLRU}, {NameBelady, NewBelady}}
	for _, sh := range []float64{0.05, 0.1, 0.2, 0.3, 0.5} {
		for _, th := range []int{1, 2} {
			ms = append(ms, Maker{fmt.Sprintf("S3-FIFO, small %.0f%%, to main after %d", 100*sh, th), NewS3FIFOSized(sh, th)})
		}
	}
	for _, sh := range []float64{0.2, 0.35, 0.5, 0.65, 0.8, 0.9} {
		ms = append(ms, Maker{fmt.Sprintf("SLRU, %.0f%% protected", 100*sh), NewSLRUSized(sh)})
	}
	for _, hl := range []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute} {
		ms = append(ms, Maker{fmt.Sprintf("LFU, half-life %v", hl), NewLFUDecay(hl)})
	}
	for _, sh := range []float64{0.25, 0.5, 0.75, 0.9} {
		ms = append(ms, Maker{fmt.Sprintf("LRU + session pins (%.0f%%)", 100*sh), NewSessionPins(sh)})
		ms = append(ms, Maker{fmt.Sprintf("LRU + oracle next-turn pins (%.0f%%)", 100*sh), NewNextTurnPins(sh)})
	}
	return ms
}

// Column is one capacity's replay of every policy.
type Column struct {
	Capacity int
	Results  []Result
}

// Study is one workload's replay at several capacities.
type Study struct {
	Name string
	// Requests and Pages are the requests and full pages written; Unique
	// the distinct pages, and Reusable the pages an unbounded store would
	// hit.
	Requests              int
	Pages, Unique         int64
	ReusableTokens        int64
	Columns               []Column
	capacityNames, makers []string
}

// RunStudy replays a under makers at each capacity.
func RunStudy(name string, a *Accesses, capacities []int, makers []Maker) (*Study, error) {
	s := &Study{Name: name, Requests: len(a.List), Unique: int64(a.Keys)}
	for _, acc := range a.List {
		s.Pages += int64(len(acc.Keys))
	}
	s.ReusableTokens = Replay(a, NewBelady(a, max(a.Keys, 1)), "unbounded").HitTokens
	for _, m := range makers {
		s.makers = append(s.makers, m.Name)
	}
	for _, c := range capacities {
		res, err := Run(a, c, makers)
		if err != nil {
			return nil, err
		}
		s.Columns = append(s.Columns, Column{Capacity: c, Results: res})
	}
	return s, nil
}

// Get returns the hit tokens of policy name at column i (-1 if absent).
func (s *Study) Get(i int, name string) int64 {
	for _, r := range s.Columns[i].Results {
		if r.Name == name {
			return r.HitTokens
		}
	}
	return -1
}

// GapShare is policy name's share of the Belady − LRU gap at column i.
func (s *Study) GapShare(i int, name string) float64 {
	lru, bel := s.Get(i, NameLRU), s.Get(i, NameBelady)
	if bel <= lru {
		return 0
	}
	return float64(s.Get(i, name)-lru) / float64(bel-lru)
}

// MinGapShare is the smallest Belady − LRU gap, as a share of LRU's
// hits, that Markdown divides by: below it a policy's share of the gap
// says nothing (LRU is already all but optimal) and is shown as "–".
const MinGapShare = 0.005

// Markdown renders the study: per capacity, each policy's hit tokens,
// their change from LRU's and its share of the Belady − LRU gap.
func (s *Study) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: %d requests, %s full pages written (%s distinct); an unbounded store would hit %s tokens.\n\n",
		s.Name, s.Requests, group(s.Pages), group(s.Unique), group(s.ReusableTokens))
	b.WriteString("| policy |")
	for _, c := range s.Columns {
		fmt.Fprintf(&b, " %s pages: hit tokens | vs LRU | of gap |", group(int64(c.Capacity)))
	}
	b.WriteString("\n|---|")
	for range s.Columns {
		b.WriteString("---:|---:|---:|")
	}
	b.WriteString("\n")
	for _, name := range s.makers {
		fmt.Fprintf(&b, "| %s |", name)
		for i := range s.Columns {
			lru, bel, got := s.Get(i, NameLRU), s.Get(i, NameBelady), s.Get(i, name)
			gap := "–"
			if float64(bel-lru) >= MinGapShare*float64(lru) {
				gap = fmt.Sprintf("%.1f%%", 100*s.GapShare(i, name))
			}
			vs := 0.0
			if lru > 0 {
				vs = float64(got-lru) / float64(lru)
			}
			fmt.Fprintf(&b, " %s | %+.1f%% | %s |", group(got), 100*vs, gap)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// group writes n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
