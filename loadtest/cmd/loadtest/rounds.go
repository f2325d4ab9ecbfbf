package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hintstream/hintstream/loadtest/report"
	"github.com/hintstream/hintstream/loadtest/speed"
)

// Each speed target is judged on the median of per-round ratios,
// measured in one run: a merged histogram lets one stalled round decide
// the p99 ratio (a floor round at 511 ms once made 0.07 look "met").
const (
	// targetP99Ratio is the largest hintstream/floor p99 of a round that
	// passes; the target holds when targetP99Rounds of every
	// targetP99Of rounds pass.
	targetP99Ratio  = 1.25
	targetP99Rounds = 4
	targetP99Of     = 5
	// targetCPURatio is the largest median hintstream/floor CPU per
	// wake-up.
	targetCPURatio = 1.10
	// stallFactor marks a round stalled when its publisher-lag p99 is
	// more than this many times the median round's.
	stallFactor = 10
)

// roundOrder is who runs first in round i (from 0): the floor in even
// rounds, hintstream in odd ones. Whichever program ran second in a
// round had the worse p99 on this machine (measured: the ratio followed
// the slot, not the binary, in A/A runs), so neither keeps the slot.
func roundOrder(i int) []speed.Target {
	if i%2 == 1 {
		return []speed.Target{speed.TargetHintstream, speed.TargetFloor}
	}
	return []speed.Target{speed.TargetFloor, speed.TargetHintstream}
}

// noiseRound is two runs of the floor, one after the other: the ratio of
// the second's p99 to the first's is what this machine alone does to a
// round's ratio, the yardstick for judging hintstream's.
type noiseRound struct{ first, second speed.LatencyResult }

func (r noiseRound) p99Ratio() float64 {
	return ratio(float64(r.second.P99), float64(r.first.P99))
}
func (r noiseRound) cpuRatio() float64 {
	return ratio(float64(r.second.CPUPerWakeup), float64(r.first.CPUPerWakeup))
}

// judgeNoise is the noise rounds' verdict by the p99 target's own rule,
// second against first: what the rule gives a program that is the floor.
func judgeNoise(rounds []noiseRound) latencyJudgement { return judgeRatios(rounds) }

// ratioRound is a round with a p99 and a CPU ratio to judge.
type ratioRound interface {
	p99Ratio() float64
	cpuRatio() float64
}

// judgeRatios applies the p99 rule (ratio ≤ targetP99Ratio) round by round.
func judgeRatios[R ratioRound](rounds []R) latencyJudgement {
	var j latencyJudgement
	for _, r := range rounds {
		p := r.p99Ratio()
		j.p99Ratios = append(j.p99Ratios, p)
		j.cpuRatios = append(j.cpuRatios, r.cpuRatio())
		if p > 0 && p <= targetP99Ratio {
			j.p99Passed++
		}
	}
	return j
}

func noiseTable(rounds []noiseRound) report.Table {
	t := report.Table{Header: []string{"round", "first p99", "second p99", "p99 second / first", "first CPU per wake-up",
		"second CPU per wake-up", "CPU second / first", "publisher lag p99 (first, second)"}}
	for i, r := range rounds {
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), ms(r.first.P99), ms(r.second.P99), fmt.Sprintf("%.2f", r.p99Ratio()),
			us(r.first.CPUPerWakeup), us(r.second.CPUPerWakeup), fmt.Sprintf("%.2f", r.cpuRatio()),
			ms(lagP99(r.first)) + ", " + ms(lagP99(r.second))})
	}
	return t
}

// latencyRound is one alternated round of the floor and hintstream (in
// roundOrder), at the same rate and request format.
type latencyRound struct {
	floor, hintstream speed.LatencyResult
}

// lag is the round's publisher-lag p99: the worse of its two runs.
func (r latencyRound) lag() time.Duration {
	return max(lagP99(r.floor), lagP99(r.hintstream))
}

func lagP99(l speed.LatencyResult) time.Duration {
	if l.SendLag == nil {
		return 0
	}
	return l.SendLag.ValueAtQuantile(0.99)
}

func (r latencyRound) p99Ratio() float64 {
	return ratio(float64(r.hintstream.P99), float64(r.floor.P99))
}
func (r latencyRound) cpuRatio() float64 {
	return ratio(float64(r.hintstream.CPUPerWakeup), float64(r.floor.CPUPerWakeup))
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stalled returns the indexes of rounds whose publisher-lag p99 exceeds
// stallFactor × the median round's. A zero median marks none.
func stalled(rounds []latencyRound) []int {
	lags := make([]float64, len(rounds))
	for i, r := range rounds {
		lags[i] = float64(r.lag())
	}
	m := median(lags)
	var out []int
	for i, l := range lags {
		if m > 0 && l > stallFactor*m {
			out = append(out, i)
		}
	}
	return out
}

// latencyJudgement is one request format's verdict over its rounds.
type latencyJudgement struct {
	p99Ratios, cpuRatios []float64
	p99Passed            int   // rounds with p99 ratio ≤ targetP99Ratio
	stalled              []int // round indexes
}

func judgeLatency(rounds []latencyRound) latencyJudgement {
	j := judgeRatios(rounds)
	j.stalled = stalled(rounds)
	return j
}

// p99Met: at least targetP99Rounds of every targetP99Of rounds passed.
func (j latencyJudgement) p99Met() bool {
	n := len(j.p99Ratios)
	return n > 0 && j.p99Passed*targetP99Of >= targetP99Rounds*n
}

func (j latencyJudgement) cpuMet() bool {
	m := median(j.cpuRatios)
	return m > 0 && m <= targetCPURatio
}

// ingestShares are the per-round hintstream/bench rates.
func ingestShares(in speed.IngestResult) []float64 {
	var s []float64
	for _, r := range in.Rounds {
		s = append(s, r.Share())
	}
	if len(s) == 0 && in.BenchMsgsPerSec() > 0 { // a single-round run
		s = append(s, in.EventsPerSec/in.BenchMsgsPerSec())
	}
	return s
}

func ratios(xs []float64, format string) string {
	var b []string
	for _, x := range xs {
		b = append(b, fmt.Sprintf(format, x))
	}
	return strings.Join(b, ", ")
}

func roundList(idx []int) string {
	if len(idx) == 0 {
		return "none"
	}
	var b []string
	for _, i := range idx {
		b = append(b, fmt.Sprint(i+1))
	}
	return strings.Join(b, ", ")
}

// latencyRoundsTable is one row per round and program, then the ratios.
func latencyRoundsTable(rounds []latencyRound) report.Table {
	t := report.Table{Header: []string{"round", "program", "sent", "lost", "p50", "p99", "p99.9", "publisher lag p99",
		"CPU per wake-up", "p99 / floor", "CPU / floor", "stalled?"}}
	st := stalled(rounds)
	for i, r := range rounds {
		mark := ""
		if slices.Contains(st, i) {
			mark = "**stalled**"
		}
		for _, target := range roundOrder(i) {
			l, p, c := r.floor, "–", "–"
			if target == speed.TargetHintstream {
				l = r.hintstream
				p, c = fmt.Sprintf("%.2f", r.p99Ratio()), fmt.Sprintf("%.2f", r.cpuRatio())
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), string(l.Target), fmt.Sprint(l.Sent), fmt.Sprint(l.Lost),
				ms(l.P50), ms(l.P99), ms(l.P999), ms(lagP99(l)), us(l.CPUPerWakeup), p, c, mark})
		}
	}
	return t
}

func ingestRoundsTable(in speed.IngestResult) report.Table {
	t := report.Table{Header: []string{"round", "nats bench js ordered msgs/s", "bench CPU per message",
		"hintstream events/s", "hintstream CPU per event", "share of the bench"}}
	for i, r := range in.Rounds {
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), fmt.Sprintf("%.0f", r.Bench.MsgsPerSec), us1(r.Bench.CPUPerMsg),
			fmt.Sprintf("%.0f", r.EventsPerSec), us1(r.CPUPerEvent), fmt.Sprintf("%.0f%%", 100*r.Share())})
	}
	return t
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
func us1(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}
