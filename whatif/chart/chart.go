// Package chart is the one SVG canvas of the module's reports: whatif's
// HTML report (LineChart, BarChart, inline with an HTML legend) and the
// load-test report's chart files (loadtest/report) draw on it. It uses
// no library: a report must load nothing.
package chart

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// Series is one line (X, Y) or, in a bar chart, one bar per category (Y).
type Series struct {
	Label string
	X, Y  []float64
}

// Marker is a dashed guide across a line chart: horizontal at At, or
// vertical at At.
type Marker struct {
	Label    string
	Vertical bool
	At       float64
}

// Geometry is a chart's size and the margins around its plot, in SVG
// user units.
type Geometry struct {
	W, H                     float64
	Left, Right, Top, Bottom float64
}

// Inline is the geometry of whatif's charts, whose legend is HTML under
// them.
var Inline = Geometry{W: 800, H: 400, Left: 90, Right: 20, Top: 20, Bottom: 50}

// PlotW and PlotH are the plot's size inside the margins.
func (g Geometry) PlotW() float64 { return g.W - g.Left - g.Right }
func (g Geometry) PlotH() float64 { return g.H - g.Top - g.Bottom }

// Colours is colour-blind safe (Okabe–Ito) and then grey.
var Colours = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#999999"}

// dashes tell apart series past the colours: a report has some twenty
// rows.
var dashes = []string{"", "6 3", "2 2"}

// Style is series i's colour and dash pattern.
func Style(i int) (colour, dash string) {
	return Colours[i%len(Colours)], dashes[(i/len(Colours))%len(dashes)]
}

// Canvas accumulates one SVG document of geometry G.
type Canvas struct {
	bytes.Buffer
	G Geometry
}

// Open starts the document (attrs are added to the svg element, e.g. a
// font-family), on a white ground with the plot's frame.
func (c *Canvas) Open(attrs string) {
	g := c.G
	fmt.Fprintf(c, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-size="12"%s>`, g.W, g.H, g.W, g.H, attrs)
	fmt.Fprintf(c, `<rect width="%g" height="%g" fill="white"/><rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`,
		g.W, g.H, g.Left, g.Top, g.PlotW(), g.PlotH())
}

// Close ends the document.
func (c *Canvas) Close() { c.WriteString("</svg>") }

// Text writes s at (x, y), anchored start, middle or end; size 0 is the
// document's.
func (c *Canvas) Text(x, y float64, anchor string, size float64, s string) {
	sz := ""
	if size > 0 {
		sz = fmt.Sprintf(` font-size="%g"`, size)
	}
	fmt.Fprintf(c, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`, x, y, anchor, sz, html.EscapeString(s))
}

// Line draws a line; dash is a stroke-dasharray ("" solid).
func (c *Canvas) Line(x1, y1, x2, y2 float64, stroke, dash string) {
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(c, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s/>`, x1, y1, x2, y2, stroke, d)
}

// AxisLabels writes the x label under the plot and the y label turned
// along its left edge.
func (c *Canvas) AxisLabels(xLabel, yLabel string) {
	g := c.G
	fmt.Fprintf(c, `<text x="%g" y="%g" text-anchor="middle">%s</text>`, g.Left+g.PlotW()/2, g.H-10, html.EscapeString(xLabel))
	fmt.Fprintf(c, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`, g.Top+g.PlotH()/2, g.Top+g.PlotH()/2, html.EscapeString(yLabel))
}

// Legend lists labels with their colours right of the plot, for a chart
// that stands alone (HTMLLegend is the inline charts').
func (c *Canvas) Legend(labels []string) {
	x := c.G.Left + c.G.PlotW() + 16
	for i, l := range labels {
		y := c.G.Top + 10 + float64(i)*20
		col, _ := Style(i)
		fmt.Fprintf(c, `<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s"/>`, x, y-9, col)
		c.Text(x+20, y, "start", 0, l)
	}
}

// yTicks draws five horizontal grid lines from y0 to y1, labelled.
func (c *Canvas) yTicks(y0, y1 float64) {
	g := c.G
	for k := 0; k <= 4; k++ {
		v := y0 + (y1-y0)*float64(k)/4
		y := g.Top + g.PlotH() - g.PlotH()*float64(k)/4
		fmt.Fprintf(c, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`,
			g.Left, y, g.Left+g.PlotW(), y, g.Left-6, y+4, Short(v))
	}
}

// HTMLLegend is a chart's legend: every label in full, with its line (or
// its bar's fill), so a long run name is never cut at the SVG's edge.
func HTMLLegend(labels []string, bars bool) []byte {
	var b bytes.Buffer
	b.WriteString(`<ul class="legend">`)
	for i, l := range labels {
		col, dash := Style(i)
		if bars {
			fmt.Fprintf(&b, `<li><svg width="28" height="12"><rect width="28" height="12" fill="%s" stroke="#333" stroke-dasharray="%s"/></svg> %s</li>`, col, dash, html.EscapeString(l))
			continue
		}
		fmt.Fprintf(&b, `<li><svg width="28" height="12"><line x1="0" y1="6" x2="28" y2="6" stroke="%s" stroke-width="3" stroke-dasharray="%s"/></svg> %s</li>`, col, dash, html.EscapeString(l))
	}
	b.WriteString("</ul>\n")
	return b.Bytes()
}

// Short writes v in three significant digits with k, M or G.
func Short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Finite reports whether v is neither NaN nor infinite.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// LineChart draws each series as a polyline, the markers as dashed
// guides, and ticks at xTicks (with their labels; nil: the ends), as an
// HTML figure with its legend.
func LineChart(id, xLabel, yLabel string, ss []Series, marks []Marker, xTicks []float64, xTickLabels []string) []byte {
	c := &Canvas{G: Inline}
	g := c.G
	pw, ph := g.PlotW(), g.PlotH()
	fmt.Fprintf(c, `<figure id="%s">`, id)
	c.Open("")
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, s := range ss {
		for i := range s.X {
			if Finite(s.X[i]) && Finite(s.Y[i]) {
				x0, x1 = min(x0, s.X[i]), max(x1, s.X[i])
				y0, y1 = min(y0, s.Y[i]), max(y1, s.Y[i])
			}
		}
	}
	if !Finite(x0) {
		x0, x1 = 0, 1
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	c.yTicks(y0, y1)
	c.AxisLabels(xLabel, yLabel)
	if xTicks == nil {
		xTicks, xTickLabels = []float64{x0, x1}, []string{Short(x0), Short(x1)}
	}
	for k, v := range xTicks {
		fmt.Fprintf(c, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, g.Left+pw*(v-x0)/(x1-x0), g.Top+ph+16, html.EscapeString(xTickLabels[k]))
	}
	for _, m := range marks {
		if m.Vertical {
			x := g.Left + pw*(min(max(m.At, x0), x1)-x0)/(x1-x0)
			fmt.Fprintf(c, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#333" stroke-dasharray="4 4"/><text x="%.1f" y="%g">%s</text>`,
				x, g.Top, x, g.Top+ph, x+4, g.Top+14, html.EscapeString(m.Label))
			continue
		}
		y := g.Top + ph - ph*(m.At-y0)/(y1-y0)
		fmt.Fprintf(c, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#333" stroke-dasharray="4 4"/><text x="%g" y="%.1f">%s</text>`,
			g.Left, y, g.Left+pw, y, g.Left+6, y-4, html.EscapeString(m.Label))
	}
	var labels []string
	for i, s := range ss {
		labels = append(labels, s.Label)
		col, dash := Style(i)
		fmt.Fprintf(c, `<polyline fill="none" stroke-width="2" stroke="%s" stroke-dasharray="%s" points="`, col, dash)
		for k := range s.X {
			if Finite(s.X[k]) && Finite(s.Y[k]) {
				fmt.Fprintf(c, "%.1f,%.1f ", g.Left+pw*(s.X[k]-x0)/(x1-x0), g.Top+ph-ph*(s.Y[k]-y0)/(y1-y0))
			}
		}
		c.WriteString(`"/>`)
	}
	c.Close()
	c.Write(HTMLLegend(labels, false))
	c.WriteString("</figure>\n")
	return c.Bytes()
}

// BarChart draws one group per category, one bar per series in each, as
// an HTML figure with its legend; value writes a bar's value in its
// tooltip.
func BarChart(id string, cats []string, yLabel string, ss []Series, value func(float64) string) []byte {
	c := &Canvas{G: Inline}
	g := c.G
	pw, ph := g.PlotW(), g.PlotH()
	fmt.Fprintf(c, `<figure id="%s">`, id)
	c.Open("")
	y0, y1 := 0.0, 0.0
	for _, s := range ss {
		for _, v := range s.Y {
			if Finite(v) {
				y0, y1 = min(y0, v), max(y1, v)
			}
		}
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	c.yTicks(y0, y1)
	c.AxisLabels("cause", yLabel)
	gw := pw / float64(max(len(cats), 1))
	bw := gw * 0.8 / float64(max(len(ss), 1))
	zero := g.Top + ph - ph*(0-y0)/(y1-y0)
	var labels []string
	for i, s := range ss {
		labels = append(labels, s.Label)
		for k, v := range s.Y {
			if !Finite(v) {
				continue
			}
			y := g.Top + ph - ph*(v-y0)/(y1-y0)
			top, h := min(y, zero), math.Abs(zero-y)
			col, dash := Style(i)
			fmt.Fprintf(c, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#333" stroke-width="0.5" stroke-dasharray="%s"><title>%s: %s</title></rect>`,
				g.Left+gw*float64(k)+gw*0.1+bw*float64(i), top, bw, h, col, dash, html.EscapeString(s.Label), value(v))
		}
	}
	for k, cat := range cats {
		fmt.Fprintf(c, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, g.Left+gw*(float64(k)+0.5), g.Top+ph+16, html.EscapeString(cat))
	}
	c.Close()
	c.Write(HTMLLegend(labels, true))
	c.WriteString("</figure>\n")
	return c.Bytes()
}
