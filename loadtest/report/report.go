// Package report writes a load-test report directory: summary.md and the
// SVG charts it links to. Charts are drawn by hand (no plotting module):
// a latency CDF on a log-x axis and a grouped bar chart. The Report is
// generic: titled sections of markdown, tables and charts, in order.
package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/whatif/chart"
)

// ErrInvalid is matched (errors.Is) by every error for a report that
// cannot be drawn: a bad file name, mismatched series, a NaN.
var ErrInvalid = errors.New("report: invalid")

// Report is the content of summary.md.
type Report struct {
	Title    string
	Intro    string // markdown under the title
	Sections []Section
}

// Section is a "##" heading and, in this order, its markdown, tables and
// charts.
type Section struct {
	Heading  string
	Markdown string
	Tables   []Table
	Charts   []Chart
}

// Table is a markdown table; each row should have len(Header) cells
// (missing ones are left empty, extra ones are an error).
type Table struct {
	Header []string
	Rows   [][]string
}

// Chart is one SVG file of the report, linked from its section.
type Chart interface {
	// FileName is the file's name in the report directory; it must end
	// in ".svg" and hold no path separator.
	FileName() string
	// Caption is the image's alt text and the line under it.
	Caption() string
	// SVG draws the chart.
	SVG() ([]byte, error)
}

// Write creates dir (and parents) and writes summary.md and every
// chart's SVG into it, replacing files of the same names.
func Write(dir string, r Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	if r.Title != "" {
		fmt.Fprintf(&md, "# %s\n\n", r.Title)
	}
	if s := strings.TrimSpace(r.Intro); s != "" {
		md.WriteString(s + "\n\n")
	}
	files := map[string]bool{"summary.md": true}
	for _, s := range r.Sections {
		if s.Heading != "" {
			fmt.Fprintf(&md, "## %s\n\n", s.Heading)
		}
		if b := strings.TrimSpace(s.Markdown); b != "" {
			md.WriteString(b + "\n\n")
		}
		for _, t := range s.Tables {
			if err := t.write(&md); err != nil {
				return err
			}
		}
		for _, c := range s.Charts {
			name := c.FileName()
			if !strings.HasSuffix(name, ".svg") || name != filepath.Base(name) || strings.ContainsAny(name, `/\`) {
				return fmt.Errorf("%w: chart file name %q", ErrInvalid, name)
			}
			if files[name] {
				return fmt.Errorf("%w: two files named %q", ErrInvalid, name)
			}
			files[name] = true
			svg, err := c.SVG()
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name), svg, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(&md, "![%s](%s)\n\n", oneLine(c.Caption()), name)
			if c.Caption() != "" {
				fmt.Fprintf(&md, "*%s*\n\n", oneLine(c.Caption()))
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(md.String()), 0o644)
}

func (t Table) write(md *strings.Builder) error {
	if len(t.Header) == 0 {
		return fmt.Errorf("%w: table without header", ErrInvalid)
	}
	row := func(cells []string) {
		md.WriteString("|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			md.WriteString(" " + cell(c) + " |")
		}
		md.WriteString("\n")
	}
	row(t.Header)
	md.WriteString("|" + strings.Repeat(" --- |", len(t.Header)) + "\n")
	for i, r := range t.Rows {
		if len(r) > len(t.Header) {
			return fmt.Errorf("%w: table row %d has %d cells for %d columns", ErrInvalid, i, len(r), len(t.Header))
		}
		row(r)
	}
	md.WriteString("\n")
	return nil
}

// cell keeps a table cell on one line and its pipes literal.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// The charts are drawn on whatif's canvas (whatif/chart), as standalone
// files with the legend right of the plot.
var geom = chart.Geometry{W: 760, H: 440, Left: 70, Right: 180, Top: 40, Bottom: 60}

// newCanvas starts a chart file with its title over the plot.
func newCanvas(title string) *chart.Canvas {
	c := &chart.Canvas{G: geom}
	c.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	c.Open(` font-family="Helvetica, Arial, sans-serif"`)
	c.Text(geom.W/2-geom.Right/2+geom.Left/2, 22, "middle", 15, title)
	return c
}

// closed ends c's document and returns it.
func closed(c *chart.Canvas) []byte {
	c.Close()
	c.WriteString("\n")
	return c.Bytes()
}

func colour(i int) string {
	col, _ := chart.Style(i)
	return col
}

func dashIf(dash bool) string {
	if dash {
		return "4 3"
	}
	return ""
}

// f writes a path coordinate.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
