package report

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
)

// wellFormed parses b as XML to the end and returns its root's name and
// the number of <path class="series"> elements.
func wellFormed(t *testing.T, b []byte) (root string, series int) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return root, series
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			for _, a := range se.Attr {
				if se.Name.Local == "path" && a.Name.Local == "class" && a.Value == "series" {
					series++
				}
			}
		}
	}
}

func histogram(base time.Duration, n int) *hdr.Histogram {
	h := hdr.New()
	for i := 1; i <= n; i++ {
		h.Record(base * time.Duration(i))
	}
	return h
}

func sample() Report {
	return Report{
		Title: "hintstream load test",
		Intro: "Run on a 2-core VM & <shared> with others.",
		Sections: []Section{{
			Heading:  "Latency at 2,000 wake-ups/s",
			Markdown: "hintstream p99 **1.234 ms**, floor p99 0.987 ms: ratio 1.25.",
			Tables: []Table{{Header: []string{"target", "p50", "p99", "note"},
				Rows: [][]string{{"hintstream", "0.812 ms", "1.234 ms", "a|b"}, {"floor", "0.650 ms", "0.987 ms"}}}},
			Charts: []Chart{CDF{File: "latency-cdf.svg", Title: "Hint latency CDF",
				Series:  []CDFSeries{SeriesOf("hintstream", histogram(10*time.Microsecond, 500)), SeriesOf("floor <yardstick>", histogram(8*time.Microsecond, 400))},
				Markers: []Marker{{Label: "2 ms target", X: 2 * time.Millisecond}}}},
		}, {
			Heading: "Hint value",
			Charts: []Chart{Bars{File: "hit-rates.svg", Title: "Tokens by outcome", YLabel: "tokens",
				Groups: []string{"no hints", "prefetch", "prefetch+pin"},
				Series: []BarSeries{{"device hit", []float64{1e6, 3.5e6, 4e6}}, {"L3 hit", []float64{2e6, 1e6, 0.8e6}},
					{"recomputed", []float64{4e6, 2.5e6, 2.2e6}}}}},
		}},
	}
}

func TestWriteSummaryAndCharts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if err := Write(dir, sample()); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# hintstream load test\n", "## Latency at 2,000 wake-ups/s\n", "**1.234 ms**",
		"| hintstream | 0.812 ms | 1.234 ms | a\\|b |", "| floor | 0.650 ms | 0.987 ms |  |", "| --- | --- | --- | --- |",
		"![Hint latency CDF](latency-cdf.svg)", "![Tokens by outcome](hit-rates.svg)", "## Hint value"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	for file, n := range map[string]int{"latency-cdf.svg": 2, "hit-rates.svg": 3} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		root, series := wellFormed(t, b)
		if root != "svg" || series != n {
			t.Errorf("%s: root <%s>, %d series paths, want <svg> and %d", file, root, series, n)
		}
		if file == "latency-cdf.svg" {
			for _, want := range []string{"floor &lt;yardstick&gt;", "2 ms target", ">1ms<", ">10µs<"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("%s lacks %q", file, want)
				}
			}
		}
	}
}

func TestCDFPointsAreOnTheLogAxis(t *testing.T) {
	// 10 µs to 1 ms spans two decades: 10 µs at the left edge, 100 µs in
	// the middle, 1 ms at the right edge.
	c := CDF{File: "c.svg", Series: []CDFSeries{{Label: "a", Points: []hdr.Point{
		{Value: 10 * time.Microsecond, Quantile: 0.5}, {Value: 100 * time.Microsecond, Quantile: 0.9},
		{Value: time.Millisecond, Quantile: 1}}}}}
	c.Tail = true // 0.5 → 0.301/4 of the height, 0.9 → 1/4, 1 → the top
	b, err := c.SVG()
	left, top, plotW, plotH := geom.Left, geom.Top, geom.PlotW(), geom.PlotH()
	if err != nil {
		t.Fatal(err)
	}
	want := "M" + f(left) + " " + f(top+plotH) + " V" + f(top+plotH*(1-math.Log10(2)/4)) + " H" + f(left+plotW/2) + " V" +
		f(top+0.75*plotH) + " H" + f(left+plotW) + " V" + f(top)
	if !strings.Contains(string(b), `d="`+want+`"`) || !strings.Contains(string(b), ">0.999<") {
		t.Fatalf("tail path not at the expected positions; want d=%q in\n%s", want, b)
	}
	c.Tail = false
	b, err = c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	want = "M" + f(left) + " " + f(top+plotH) + " V" + f(top+plotH/2) + " H" + f(left+plotW/2) + " V" +
		f(top+0.1*plotH) + " H" + f(left+plotW) + " V" + f(top)
	if !strings.Contains(string(b), `d="`+want+`"`) {
		t.Fatalf("path not at the expected log-x positions; want d=%q in\n%s", want, b)
	}
}

func TestInvalidReports(t *testing.T) {
	dir := t.TempDir()
	bad := []Report{
		{Sections: []Section{{Charts: []Chart{CDF{File: "../x.svg", Series: []CDFSeries{{Label: "a", Points: []hdr.Point{{Value: 1, Quantile: 1}}}}}}}}},
		{Sections: []Section{{Charts: []Chart{CDF{File: "x.svg"}}}}},
		{Sections: []Section{{Charts: []Chart{Bars{File: "b.svg", Groups: []string{"a", "b"}, Series: []BarSeries{{"s", []float64{1}}}}}}}},
		{Sections: []Section{{Charts: []Chart{Bars{File: "b.svg", Groups: []string{"a"}, Series: []BarSeries{{"s", []float64{-1}}}}}}}},
		{Sections: []Section{{Tables: []Table{{Header: []string{"a"}, Rows: [][]string{{"1", "2"}}}}}}},
		{Sections: []Section{{Charts: []Chart{
			Bars{File: "b.svg", Groups: []string{"a"}, Series: []BarSeries{{"s", []float64{1}}}},
			Bars{File: "b.svg", Groups: []string{"a"}, Series: []BarSeries{{"s", []float64{1}}}}}}}},
	}
	for i, r := range bad {
		if err := Write(dir, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("report %d: %v, want ErrInvalid", i, err)
		}
	}
}

func TestNiceScale(t *testing.T) {
	for _, c := range []struct{ v, step, top float64 }{{0, 0.2, 1}, {1, 0.2, 1}, {7.3e6, 2e6, 8e6}, {0.93, 0.2, 1}, {100, 20, 100}} {
		if s, tp := niceScale(c.v); s != c.step || tp != c.top {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", c.v, s, tp, c.step, c.top)
		}
	}
}
