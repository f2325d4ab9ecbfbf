package whatif

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// WriteHTML writes dir/index.html: the tables and inline SVG charts
// (saving over time, lost savings by cause and, with a sweep, saving
// against the swept value). It loads nothing: no script, font or style
// from the network.
func (r *Report) WriteHTML(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("whatif: report: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>hintstream whatif</title>` +
		`<style>body{font-family:Helvetica,Arial,sans-serif;margin:2em;max-width:1000px}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>What hints would save: %s</h1>\n", html.EscapeString(r.Source))
	var txt bytes.Buffer
	if err := r.Text(&txt); err != nil {
		return err
	}
	fmt.Fprintf(&b, "<pre>%s</pre>\n", html.EscapeString(txt.String()))
	if len(r.Points) > 0 {
		p := r.Points[0]
		var lines []series
		for _, run := range p.Runs {
			if run.Kind == "off" {
				continue
			}
			s := series{label: run.Name}
			for _, t := range run.SavingOverTime {
				s.x = append(s.x, t.AtS)
				s.y = append(s.y, t.Saving)
			}
			lines = append(lines, s)
		}
		fmt.Fprintf(&b, "<h2>Prefill saved over time%s</h2>\n", html.EscapeString(labelSuffix(p.Label)))
		b.Write(lineChart("trace time (s)", "prefill tokens saved so far", lines))
		var bars []series
		causes := []string{"no wake-up", "wrong worker", "load unfinished", "evicted", "pin lapsed", "rest"}
		for _, run := range p.Runs {
			if l := run.Lost; l != nil {
				bars = append(bars, series{label: run.Name, y: []float64{l.NoWakeup, l.WrongWorker, l.LoadNotFinished,
					l.EvictedBeforeUse, l.PinLapsed, l.Rest}})
			}
		}
		fmt.Fprintf(&b, "<h2>Saving lost against the clairvoyant bound, by cause%s</h2>\n", html.EscapeString(labelSuffix(p.Label)))
		b.Write(barChart(causes, "prefill tokens", bars))
	}
	if r.Sweep != nil {
		var lines []series
		for k, run := range r.Points[0].Runs {
			s := series{label: run.Name}
			for i, p := range r.Points {
				s.x = append(s.x, r.Sweep.Values[i])
				s.y = append(s.y, 100*float64(p.Runs[k].SavingShare))
			}
			lines = append(lines, s)
		}
		fmt.Fprintf(&b, "<h2>Prefill saved against %s</h2>\n", sweepTitle(r.Sweep.Dim))
		b.Write(lineChart(sweepTitle(r.Sweep.Dim)+" ("+sweepUnit(r.Sweep.Dim)+")", "prefill saved (% of prompt tokens)", lines))
	}
	b.WriteString("</body></html>\n")
	return os.WriteFile(filepath.Join(dir, "index.html"), b.Bytes(), 0o644)
}

func labelSuffix(l string) string {
	if l == "" {
		return ""
	}
	return " (" + l + ")"
}

func sweepUnit(dim string) string {
	switch dim {
	case SweepL3:
		return "bytes"
	case SweepBandwidth:
		return "bytes/s"
	}
	return "blocks"
}

type series struct {
	label string
	x, y  []float64
}

// Chart geometry, SVG user units.
const (
	cw, ch                       = 800.0, 400.0
	cLeft, cRight, cTop, cBottom = 90.0, 190.0, 20.0, 50.0
	pw, ph                       = cw - cLeft - cRight, ch - cTop - cBottom
)

var colours = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#999999"}

func svgOpen(b *bytes.Buffer) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-size="12">`, cw, ch, cw, ch)
	fmt.Fprintf(b, `<rect width="%g" height="%g" fill="white"/><rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`,
		cw, ch, cLeft, cTop, pw, ph)
}

func legend(b *bytes.Buffer, labels []string) {
	for i, l := range labels {
		y := cTop + 10 + float64(i)*18
		fmt.Fprintf(b, `<rect x="%g" y="%g" width="14" height="10" fill="%s"/><text x="%g" y="%g">%s</text>`,
			cLeft+pw+12, y-9, colours[i%len(colours)], cLeft+pw+32, y, html.EscapeString(l))
	}
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

// lineChart draws each series as a polyline with points.
func lineChart(xLabel, yLabel string, ss []series) []byte {
	var b bytes.Buffer
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
	for _, v := range []float64{x0, x1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, cLeft+pw*(v-x0)/(x1-x0), cTop+ph+16, short(v))
	}
	var labels []string
	for i, s := range ss {
		labels = append(labels, s.label)
		col := colours[i%len(colours)]
		b.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + col + `" points="`)
		for k := range s.x {
			if finite(s.x[k]) && finite(s.y[k]) {
				fmt.Fprintf(&b, "%.1f,%.1f ", cLeft+pw*(s.x[k]-x0)/(x1-x0), cTop+ph-ph*(s.y[k]-y0)/(y1-y0))
			}
		}
		b.WriteString(`"/>`)
	}
	legend(&b, labels)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// barChart draws one group per category, one bar per series in each.
func barChart(cats []string, yLabel string, ss []series) []byte {
	var b bytes.Buffer
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
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`,
				cLeft+gw*float64(k)+gw*0.1+bw*float64(i), top, bw, h, colours[i%len(colours)], html.EscapeString(s.label), tokens(v))
		}
	}
	for k, c := range cats {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, cLeft+gw*(float64(k)+0.5), cTop+ph+16, html.EscapeString(c))
	}
	legend(&b, labels)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
