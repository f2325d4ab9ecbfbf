package whatif

import (
	"bytes"
	"fmt"
	"html"

	"github.com/hintstream/hintstream/whatif/chart"
)

// chartsHTML writes the charts: the first point's saving over time and
// lost savings by cause, and with a sweep the saving of every row
// against the swept value; with an l3 sweep also the chart behind "hints
// are worth N GiB of L3" (l3Chart).
func (r *Report) chartsHTML(b *bytes.Buffer) {
	p := r.Points[0]
	var lines []chart.Series
	for _, run := range p.Runs {
		if run.Kind == "off" || len(run.SavingOverTime) == 0 {
			continue
		}
		s := chart.Series{Label: run.Name}
		for _, t := range run.SavingOverTime {
			s.X = append(s.X, t.AtS)
			s.Y = append(s.Y, t.Saving)
		}
		lines = append(lines, s)
	}
	fmt.Fprintf(b, "<h2>Prefill saved over time%s</h2>\n", html.EscapeString(labelSuffix(p.Label)))
	b.Write(chart.LineChart("over-time-chart", "trace time (s)", "prefill tokens saved so far", lines, nil, nil, nil))
	var bars []chart.Series
	causes := []string{"no wake-up", "wrong worker", "load unfinished", "evicted", "pin lapsed", "rest"}
	for _, run := range p.Runs {
		if l := run.Lost; l != nil {
			bars = append(bars, chart.Series{Label: run.Name, Y: []float64{l.NoWakeup, l.WrongWorker, l.LoadNotFinished,
				l.EvictedBeforeUse, l.PinLapsed, l.Rest}})
		}
	}
	fmt.Fprintf(b, "<h2>Saving lost against the clairvoyant bound, by cause%s</h2>\n", html.EscapeString(labelSuffix(p.Label)))
	b.Write(chart.BarChart("lost-chart", causes, "prefill tokens", bars, tokens))
	if r.Sweep == nil {
		return
	}
	xs, ticks := r.sweepAxis()
	lines = nil
	for k, run := range p.Runs {
		s := chart.Series{Label: run.Name}
		for i, q := range r.Points {
			if k < len(q.Runs) {
				s.X = append(s.X, xs[i])
				s.Y = append(s.Y, 100*float64(q.Runs[k].SavingShare))
			}
		}
		lines = append(lines, s)
	}
	fmt.Fprintf(b, "<h2>Prefill saved against %s, each point against its own no-hints run</h2>\n", sweepTitle(r.Sweep.Dim))
	b.Write(chart.LineChart("sweep-chart", sweepTitle(r.Sweep.Dim)+" ("+sweepUnit(r.Sweep.Dim)+")", "prefill saved (% of prompt tokens)", lines, nil, xs, ticks))
	if r.Sweep.Dim == SweepL3 {
		r.l3Chart(b, xs, ticks)
	}
}

// sweepAxis is each point's x (GiB for L3) and its label as given.
func (r *Report) sweepAxis() ([]float64, []string) {
	var xs []float64
	for _, v := range r.Sweep.Values {
		if r.Sweep.Dim == SweepL3 {
			v /= 1 << 30
		}
		xs = append(xs, v)
	}
	return xs, r.Sweep.Labels
}

// l3Chart draws, against L3 capacity, the prefill saved relative to no
// hints at the smallest L3: no hints (LRU alone) rises with capacity,
// and where it meets hintstream's best saving at the smallest point is
// what hints are worth in L3.
func (r *Report) l3Chart(b *bytes.Buffer, xs []float64, ticks []string) {
	pts := sortedByL3(r.Points)
	base := offCost(pts[0])
	var lines []chart.Series
	for _, pick := range []struct {
		label string
		cost  func(Point) (float64, bool)
	}{
		{"no hints (LRU alone)", func(p Point) (float64, bool) { return offCost(p), true }},
		{"hintstream's best policy at each point", func(p Point) (float64, bool) {
			if p.Summary == nil {
				return 0, false
			}
			return offCost(p) - p.Summary.Saving, true
		}},
		{"best peer at each point", func(p Point) (float64, bool) {
			if p.Summary == nil || p.Summary.BestPeer == "" {
				return 0, false
			}
			return offCost(p) - p.Summary.BestPeerSaving, true
		}},
	} {
		s := chart.Series{Label: pick.label}
		for i, p := range r.Points {
			if c, ok := pick.cost(p); ok {
				s.X = append(s.X, xs[i])
				s.Y = append(s.Y, base-c)
			}
		}
		if len(s.X) > 0 {
			lines = append(lines, s)
		}
	}
	var marks []chart.Marker
	if s := pts[0].Summary; s != nil {
		marks = append(marks, chart.Marker{Label: "hintstream's best at " + FormatBytes(float64(pts[0].Cluster.L3Bytes)), At: s.Saving})
	}
	if w := r.HintsWorthL3Bytes; w != nil {
		marks = append(marks, chart.Marker{Label: "no hints gets there: " + FormatBytes(float64(r.HintsWorthL3At+*w)), Vertical: true,
			At: float64(r.HintsWorthL3At+*w) / (1 << 30)})
	}
	fmt.Fprintf(b, "<h2>Prefill saved against L3 capacity, against no hints at the smallest point</h2>\n<p>%s</p>\n", html.EscapeString(r.worthSentence()))
	b.Write(chart.LineChart("l3-worth-chart", "L3 capacity (GiB)", "prefill tokens saved", lines, marks, xs, ticks))
}
