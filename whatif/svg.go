package whatif

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// The charts are inline SVG, drawn here with no library: the report
// must load nothing. Each chart's legend is HTML under it (htmlLegend),
// so a long run name is never cut at the SVG's edge.

type series struct {
	label string
	x, y  []float64
}

// marker is a dashed guide across a line chart: horizontal at y, or
// vertical at x.
type marker struct {
	label    string
	vertical bool
	at       float64
}

// Chart geometry, SVG user units.
const (
	cw, ch                       = 800.0, 400.0
	cLeft, cRight, cTop, cBottom = 90.0, 20.0, 20.0, 50.0
	pw, ph                       = cw - cLeft - cRight, ch - cTop - cBottom
)

var colours = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#999999"}

// dashes tell apart series past the colours: a report has some twenty
// rows.
var dashes = []string{"", "6 3", "2 2"}

func style(i int) (colour, dash string) {
	return colours[i%len(colours)], dashes[(i/len(colours))%len(dashes)]
}

// htmlLegend is a chart's legend: every label in full, with its line.
func htmlLegend(labels []string, bars bool) []byte {
	var b bytes.Buffer
	b.WriteString(`<ul class="legend">`)
	for i, l := range labels {
		col, dash := style(i)
		if bars {
			fmt.Fprintf(&b, `<li><svg width="28" height="12"><rect width="28" height="12" fill="%s" stroke="#333" stroke-dasharray="%s"/></svg> %s</li>`, col, dash, html.EscapeString(l))
			continue
		}
		fmt.Fprintf(&b, `<li><svg width="28" height="12"><line x1="0" y1="6" x2="28" y2="6" stroke="%s" stroke-width="3" stroke-dasharray="%s"/></svg> %s</li>`, col, dash, html.EscapeString(l))
	}
	b.WriteString("</ul>\n")
	return b.Bytes()
}
func svgOpen(b *bytes.Buffer) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-size="12">`, cw, ch, cw, ch)
	fmt.Fprintf(b, `<rect width="%g" height="%g" fill="white"/><rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`,
		cw, ch, cLeft, cTop, pw, ph)
}

func axes(b *bytes.Buffer, xLabel, yLabel string, y0, y1 float64) {
	for k := 0; k <= 4; k++ {
		v := y0 + (y1-y0)*float64(k)/4
		y := cTop + ph - ph*float64(k)/4
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`,
			cLeft, y, cLeft+pw, y, cLeft-6, y+4, short(v))
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`, cLeft+pw/2, ch-10, html.EscapeString(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`, cTop+ph/2, cTop+ph/2, html.EscapeString(yLabel))
}

func short(v float64) string {
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

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// lineChart draws each series as a polyline, the markers as dashed
// guides, and ticks at xTicks (with their labels; nil: the ends).
func lineChart(id, xLabel, yLabel string, ss []series, marks []marker, xTicks []float64, xTickLabels []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<figure id="%s">`, id)
	svgOpen(&b)
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, s := range ss {
		for i := range s.x {
			if finite(s.x[i]) && finite(s.y[i]) {
				x0, x1 = min(x0, s.x[i]), max(x1, s.x[i])
				y0, y1 = min(y0, s.y[i]), max(y1, s.y[i])
			}
		}
	}
	if !finite(x0) {
		x0, x1 = 0, 1
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	axes(&b, xLabel, yLabel, y0, y1)
	if xTicks == nil {
		xTicks, xTickLabels = []float64{x0, x1}, []string{short(x0), short(x1)}
	}
	for k, v := range xTicks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, cLeft+pw*(v-x0)/(x1-x0), cTop+ph+16, html.EscapeString(xTickLabels[k]))
	}
	for _, m := range marks {
		if m.vertical {
			x := cLeft + pw*(min(max(m.at, x0), x1)-x0)/(x1-x0)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#333" stroke-dasharray="4 4"/><text x="%.1f" y="%g">%s</text>`,
				x, cTop, x, cTop+ph, x+4, cTop+14, html.EscapeString(m.label))
			continue
		}
		y := cTop + ph - ph*(m.at-y0)/(y1-y0)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#333" stroke-dasharray="4 4"/><text x="%g" y="%.1f">%s</text>`,
			cLeft, y, cLeft+pw, y, cLeft+6, y-4, html.EscapeString(m.label))
	}
	var labels []string
	for i, s := range ss {
		labels = append(labels, s.label)
		col, dash := style(i)
		fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2" stroke="%s" stroke-dasharray="%s" points="`, col, dash)
		for k := range s.x {
			if finite(s.x[k]) && finite(s.y[k]) {
				fmt.Fprintf(&b, "%.1f,%.1f ", cLeft+pw*(s.x[k]-x0)/(x1-x0), cTop+ph-ph*(s.y[k]-y0)/(y1-y0))
			}
		}
		b.WriteString(`"/>`)
	}
	b.WriteString("</svg>")
	b.Write(htmlLegend(labels, false))
	b.WriteString("</figure>\n")
	return b.Bytes()
}

// barChart draws one group per category, one bar per series in each.
func barChart(id string, cats []string, yLabel string, ss []series) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<figure id="%s">`, id)
	svgOpen(&b)
	y0, y1 := 0.0, 0.0
	for _, s := range ss {
		for _, v := range s.y {
			if finite(v) {
				y0, y1 = min(y0, v), max(y1, v)
			}
		}
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	axes(&b, "cause", yLabel, y0, y1)
	gw := pw / float64(max(len(cats), 1))
	bw := gw * 0.8 / float64(max(len(ss), 1))
	zero := cTop + ph - ph*(0-y0)/(y1-y0)
	var labels []string
	for i, s := range ss {
		labels = append(labels, s.label)
		for k, v := range s.y {
			if !finite(v) {
				continue
			}
			y := cTop + ph - ph*(v-y0)/(y1-y0)
			top, h := min(y, zero), math.Abs(zero-y)
			col, dash := style(i)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#333" stroke-width="0.5" stroke-dasharray="%s"><title>%s: %s</title></rect>`,
				cLeft+gw*float64(k)+gw*0.1+bw*float64(i), top, bw, h, col, dash, html.EscapeString(s.label), tokens(v))
		}
	}
	for k, c := range cats {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, cLeft+gw*(float64(k)+0.5), cTop+ph+16, html.EscapeString(c))
	}
	b.WriteString("</svg>")
	b.Write(htmlLegend(labels, true))
	b.WriteString("</figure>\n")
	return b.Bytes()
}
