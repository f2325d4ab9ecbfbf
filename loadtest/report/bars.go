package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/hintstream/hintstream/whatif/chart"
)

// Bars is a grouped bar chart: along x one group per label, in each
// group one bar per series (e.g. groups = modes, series = device hits,
// L3 hits, recomputed tokens).
type Bars struct {
	File   string // e.g. "hit-rates.svg"
	Title  string
	YLabel string
	Groups []string
	Series []BarSeries
}

// BarSeries is one colour: Values[i] is its bar in Groups[i]; values are
// finite and ≥ 0.
type BarSeries struct {
	Label  string
	Values []float64
}

// FileName implements Chart.
func (c Bars) FileName() string { return c.File }

// Caption implements Chart.
func (c Bars) Caption() string { return c.Title }

// SVG implements Chart.
func (c Bars) SVG() ([]byte, error) {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return nil, fmt.Errorf("%w: bar chart %q needs groups and series", ErrInvalid, c.File)
	}
	top0 := 0.0
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return nil, fmt.Errorf("%w: bar series %q has %d values for %d groups", ErrInvalid, s.Label, len(s.Values), len(c.Groups))
		}
		for _, v := range s.Values {
			if !chart.Finite(v) || v < 0 {
				return nil, fmt.Errorf("%w: bar series %q: value %v", ErrInvalid, s.Label, v)
			}
			top0 = max(top0, v)
		}
	}
	step, ymax := niceScale(top0)
	y := func(v float64) float64 { return geom.Top + (1-v/ymax)*geom.PlotH() }
	cv := newCanvas(c.Title)
	for v := 0.0; v <= ymax+step/2; v += step {
		cv.Line(geom.Left, y(v), geom.Left+geom.PlotW(), y(v), "#eee", "")
		cv.Text(geom.Left-6, y(v)+4, "end", 11, tick(v))
	}
	cv.AxisLabels("", c.YLabel)
	groupW := geom.PlotW() / float64(len(c.Groups))
	barW := groupW * 0.8 / float64(len(c.Series))
	for g, label := range c.Groups {
		cv.Text(geom.Left+groupW*(float64(g)+0.5), geom.Top+geom.PlotH()+16, "middle", 11, label)
	}
	labels := make([]string, len(c.Series))
	for i, s := range c.Series {
		labels[i] = s.Label
		var d strings.Builder
		for g, v := range s.Values {
			x0 := geom.Left + groupW*float64(g) + groupW*0.1 + barW*float64(i)
			h := geom.PlotH() * v / ymax
			fmt.Fprintf(&d, "M%s %s h%s v%s h%s Z ", f(x0), f(geom.Top+geom.PlotH()), f(barW), f(-h), f(-barW))
		}
		fmt.Fprintf(cv, `<path class="series" d="%s" fill="%s"><title>%s</title></path>`+"\n",
			strings.TrimSpace(d.String()), colour(i), html.EscapeString(s.Label))
	}
	cv.Legend(labels)
	return closed(cv), nil
}

// niceScale picks a tick step of 1, 2 or 5 × 10ⁿ giving about 5 ticks,
// and the axis top (a whole number of steps ≥ v).
func niceScale(v float64) (step, top float64) {
	if v <= 0 {
		return 0.2, 1
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; raw <= step {
			break
		}
	}
	return step, math.Ceil(v/step-1e-9) * step
}

func tick(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%.4g", v)
}
