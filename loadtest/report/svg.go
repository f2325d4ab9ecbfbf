package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// Geometry shared by the charts (SVG user units).
const (
	width, height            = 760.0, 440.0
	left, right, top, bottom = 70.0, 180.0, 40.0, 60.0
	plotW, plotH             = width - left - right, height - top - bottom
	fontFamily               = "Helvetica, Arial, sans-serif"
)

// palette is colour-blind safe (Okabe–Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

func colour(i int) string { return palette[i%len(palette)] }

// canvas accumulates one SVG document.
type canvas struct{ b bytes.Buffer }

func newCanvas(title string) *canvas {
	c := &canvas{}
	fmt.Fprintf(&c.b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="%s" font-size="12">`+"\n",
		width, height, width, height, fontFamily)
	fmt.Fprintf(&c.b, `<rect width="%g" height="%g" fill="white"/>`+"\n", width, height)
	c.text(width/2-right/2+left/2, 22, "middle", 15, title)
	return c
}

func (c *canvas) text(x, y float64, anchor string, size float64, s string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="%s" font-size="%g">%s</text>`+"\n", f(x), f(y), anchor, size, esc(s))
}

func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, dash bool) {
	d := ""
	if dash {
		d = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"%s/>`+"\n", f(x1), f(y1), f(x2), f(y2), stroke, d)
}

// legend lists labels with their colours to the right of the plot.
func (c *canvas) legend(labels []string) {
	x := left + plotW + 16
	for i, l := range labels {
		y := top + 10 + float64(i)*20
		fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="14" height="10" fill="%s"/>`+"\n", f(x), f(y-9), colour(i))
		c.text(x+20, y, "start", 12, l)
	}
}

func (c *canvas) frame(xLabel, yLabel string) {
	fmt.Fprintf(&c.b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	c.text(left+plotW/2, height-14, "middle", 12, xLabel)
	fmt.Fprintf(&c.b, `<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n",
		f(top+plotH/2), f(top+plotH/2), esc(yLabel))
}

func (c *canvas) bytes() []byte {
	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
