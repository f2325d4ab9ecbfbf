package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
	"github.com/hintstream/hintstream/whatif/chart"
)

// CDF is a latency CDF chart: one line per series, latency on a log-x
// axis, the cumulative fraction on y.
type CDF struct {
	File   string // e.g. "latency-cdf.svg"
	Title  string
	XLabel string // default "latency (log scale)"
	Series []CDFSeries
	// Markers are vertical dashed lines, e.g. a 2 ms target.
	Markers []Marker
	// Tail draws y on HdrHistogram's percentile scale, −log10(1−q): equal
	// room for 0–90%, 90–99%, 99–99.9% and 99.9–99.99%, so the tail the
	// targets are about is visible. Default: linear y.
	Tail bool
}

// CDFSeries is one line; Points in increasing Value (as hdr's CDF gives
// them), values > 0.
type CDFSeries struct {
	Label  string
	Points []hdr.Point
}

// Marker is a labelled vertical line at X.
type Marker struct {
	Label string
	X     time.Duration
}

// SeriesOf is a histogram's CDF as a series.
func SeriesOf(label string, h *hdr.Histogram) CDFSeries {
	return CDFSeries{Label: label, Points: h.CDF()}
}

// FileName implements Chart.
func (c CDF) FileName() string { return c.File }

// Caption implements Chart.
func (c CDF) Caption() string { return c.Title }

// SVG implements Chart.
func (c CDF) SVG() ([]byte, error) {
	if len(c.Series) == 0 {
		return nil, fmt.Errorf("%w: CDF %q without series", ErrInvalid, c.File)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			return nil, fmt.Errorf("%w: CDF series %q without points", ErrInvalid, s.Label)
		}
		for _, p := range s.Points {
			if !chart.Finite(p.Quantile) || p.Quantile < 0 || p.Quantile > 1 {
				return nil, fmt.Errorf("%w: CDF series %q: quantile %v", ErrInvalid, s.Label, p.Quantile)
			}
			v := float64(max(p.Value, time.Nanosecond))
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	for _, m := range c.Markers {
		v := float64(max(m.X, time.Nanosecond))
		lo, hi = min(lo, v), max(hi, v)
	}
	// Whole decades, so the ticks fall at the edges too.
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	x := func(d time.Duration) float64 {
		v := math.Log10(float64(max(d, time.Nanosecond)))
		return geom.Left + (v-dLo)/(dHi-dLo)*geom.PlotW()
	}
	y := func(q float64) float64 { return geom.Top + (1-q)*geom.PlotH() }
	yTicks := []float64{0, 0.25, 0.5, 0.75, 0.9, 0.99, 1}
	if c.Tail {
		const nines = 4.0 // 99.99% at the geom.Top
		y = func(q float64) float64 {
			v := nines
			if q < 1 {
				v = min(-math.Log10(1-q), nines)
			}
			return geom.Top + (1-v/nines)*geom.PlotH()
		}
		yTicks = []float64{0, 0.9, 0.99, 0.999, 0.9999}
	}
	xl := c.XLabel
	if xl == "" {
		xl = "latency (log scale)"
	}
	cv := newCanvas(c.Title)
	for d := dLo; d <= dHi; d++ {
		at := time.Duration(math.Pow(10, d))
		cv.Line(x(at), geom.Top, x(at), geom.Top+geom.PlotH(), "#ddd", "")
		cv.Text(x(at), geom.Top+geom.PlotH()+16, "middle", 11, at.String())
	}
	for _, q := range yTicks {
		cv.Line(geom.Left, y(q), geom.Left+geom.PlotW(), y(q), "#eee", dashIf(!c.Tail && (q == 0.9 || q == 0.99)))
		cv.Text(geom.Left-6, y(q)+4, "end", 11, fmt.Sprintf("%g", q))
	}
	cv.AxisLabels(xl, "fraction of hints ≤ latency")
	for _, m := range c.Markers {
		cv.Line(x(m.X), geom.Top, x(m.X), geom.Top+geom.PlotH(), "#c00", "4 3")
		cv.Text(x(m.X)+4, geom.Top+12, "start", 11, m.Label)
	}
	labels := make([]string, len(c.Series))
	for i, s := range c.Series {
		labels[i] = s.Label
		var d strings.Builder
		// Steps: a CDF holds its value until the next point.
		prevY := y(0)
		for j, p := range s.Points {
			px := x(p.Value)
			if j == 0 {
				fmt.Fprintf(&d, "M%s %s", f(px), f(prevY))
			} else {
				fmt.Fprintf(&d, " H%s", f(px))
			}
			prevY = y(p.Quantile)
			fmt.Fprintf(&d, " V%s", f(prevY))
		}
		fmt.Fprintf(cv, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="2"><title>%s</title></path>`+"\n",
			d.String(), colour(i), html.EscapeString(s.Label))
	}
	cv.Legend(labels)
	return closed(cv), nil
}
