package chart

import (
	"encoding/xml"
	"strings"
	"testing"
)

// A standalone chart is one well-formed SVG document: text escaped, a
// legend entry per label, styles told apart past the colours.
func TestCanvasDrawsOneDocument(t *testing.T) {
	c := &Canvas{G: Geometry{W: 300, H: 200, Left: 30, Right: 100, Top: 10, Bottom: 20}}
	c.Open(` font-family="serif"`)
	c.Line(0, 0, 10, 10, "#333", "4 3")
	c.Text(5, 5, "start", 15, `a <b> & "c"`)
	c.AxisLabels("x", "y")
	c.Legend([]string{"one", "two"})
	c.Close()
	var root struct {
		XMLName xml.Name
		Texts   []string   `xml:"text"`
		Rects   []struct{} `xml:"rect"`
	}
	if err := xml.Unmarshal(c.Bytes(), &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document: %v\n%s", err, c.Bytes())
	}
	// ground, frame, two legend swatches; the title, two axis labels, two legend labels
	if len(root.Rects) != 4 || len(root.Texts) != 5 || root.Texts[0] != `a <b> & "c"` {
		t.Fatalf("%d rects, texts %q", len(root.Rects), root.Texts)
	}
	if !strings.Contains(c.String(), `font-size="15"`) || !strings.Contains(c.String(), `stroke-dasharray="4 3"`) {
		t.Fatalf("size or dash lost:\n%s", c.String())
	}
	if a, _ := Style(0); a != Colours[0] {
		t.Fatalf("style 0 is %s", a)
	}
	c0, d0 := Style(0)
	c1, d1 := Style(len(Colours))
	if c0 != c1 || d0 == d1 {
		t.Fatal("series past the colours must differ by dash")
	}
}
