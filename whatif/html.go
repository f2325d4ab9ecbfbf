package whatif

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
)

// pageStyle is the report's only style, inline: the page loads nothing
// (no script, font, style or image from anywhere).
const pageStyle = `body{font-family:Helvetica,Arial,sans-serif;margin:2em;max-width:1400px;color:#222}` +
	`table{border-collapse:collapse;margin:1em 0;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px}` +
	`th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}tr.peer td{background:#fbf7ee}` +
	`tr.bound td{background:#f3f6fb}td.note{font-size:12px;color:#555;min-width:18em;max-width:30em}small{color:#666}` +
	`#summary{border:2px solid #0072B2;padding:0.5em 1.5em;background:#f5f9fc}code{background:#eee;padding:1px 4px}` +
	`ul.legend{list-style:none;padding:0;columns:2;font-size:13px}ul.legend li{margin:2px 0}figure{margin:1em 0}`

// WriteHTML writes dir/index.html: what to turn on first, then per point
// the runs, the lost savings by cause and by mechanism as tables, and
// inline SVG charts (saving over time, lost savings by cause and, with a
// sweep, saving against the swept value).
func (r *Report) WriteHTML(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("whatif: report: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>hintstream whatif</title><style>` + pageStyle + `</style></head><body>`)
	fmt.Fprintf(&b, "<h1>What hints would save: %s</h1>\n", html.EscapeString(r.Source))
	fmt.Fprintf(&b, "<p>%d requests (%d conversations, %d next turns), %s prompt tokens over %.0f s; reusable share with unbounded caches %s.",
		r.Requests, r.Conversations, r.NextTurns, tokens(float64(r.PromptTokens)), r.DurationS, pct(r.Reusable))
	if r.Skipped > 0 {
		fmt.Fprintf(&b, " %d bad lines skipped (first: %s).", r.Skipped, html.EscapeString(r.FirstSkipped))
	}
	fmt.Fprintf(&b, " Played at %d requests a second (%.1f s).</p>\n", int(r.RequestsPerS), r.ElapsedS)
	if r.Signals != nil {
		for _, a := range r.Signals.Assumptions {
			fmt.Fprintf(&b, "<p>Assumed: %s.</p>\n", html.EscapeString(a))
		}
	}
	r.summaryHTML(&b)
	for _, p := range r.Points {
		p.tablesHTML(&b)
	}
	if len(r.Points) > 0 {
		r.chartsHTML(&b)
	}
	b.WriteString("</body></html>\n")
	return os.WriteFile(filepath.Join(dir, "index.html"), b.Bytes(), 0o644)
}

// summaryHTML is the "what to turn on" box.
func (r *Report) summaryHTML(b *bytes.Buffer) {
	b.WriteString(`<section id="summary"><h2>What to turn on</h2>`)
	any := false
	for _, p := range r.Points {
		s := p.Summary
		if s == nil {
			continue
		}
		any = true
		fmt.Fprintf(b, "<p>%s%s</p>", html.EscapeString(labelPrefix(p.Label)), html.EscapeString(s.sentence()))
		fmt.Fprintf(b, "<p>In <code>hintstream run</code>: <code>%s</code>", html.EscapeString(joinOr(s.RunFlags, "the defaults")))
		for _, x := range s.Besides {
			fmt.Fprintf(b, "; and %s", html.EscapeString(x))
		}
		b.WriteString(".")
		if s.Better != "" {
			fmt.Fprintf(b, " With a store setting on top, %q saves more.", html.EscapeString(s.Better))
		}
		b.WriteString("</p>\n")
	}
	if !any {
		b.WriteString("<p>No hintstream policy was played.</p>")
	}
	if s := r.worthSentence(); s != "" {
		fmt.Fprintf(b, `<p id="hints-worth"><strong>%s</strong></p>`, html.EscapeString(s))
	}
	b.WriteString("</section>\n")
}

// tablesHTML writes one point's tables: the runs, then the lost savings
// by cause and by mechanism.
func (p Point) tablesHTML(b *bytes.Buffer) {
	c := p.Cluster
	fmt.Fprintf(b, "<h2>Runs%s</h2>\n<p>%d workers × %d device blocks, L3 %s (%d pages), %s, α %.2f, %d KV bytes/token, %d-token blocks.</p>\n",
		html.EscapeString(labelSuffix(p.Label)), c.Workers, c.DeviceBlocks, FormatBytes(float64(c.L3Bytes)), p.L3Pages, bandwidth(c.L3Bandwidth),
		c.Alpha, c.KVBytesPerToken, c.BlockSize)
	b.WriteString(`<table class="runs"><thead><tr><th>run</th><th>kind</th><th>prefill saved (tokens)</th><th>of prompt</th>` +
		`<th>of clairvoyant bound</th><th>of hint-reachable bound</th><th>of oracle</th><th>prefetches</th><th>wasted prefetch</th>` +
		`<th>pins</th><th>time (s)</th><th>why equal</th></tr></thead><tbody>`)
	for _, run := range p.Runs {
		class := run.Kind
		if class == "reachable" {
			class = "bound"
		}
		name := html.EscapeString(run.Name)
		if run.Source != "" {
			name += "<br><small>after " + html.EscapeString(run.Source) + "</small>"
		}
		fmt.Fprintf(b, `<tr class="%s"><td>%s</td><td>%s</td>`, class, name, html.EscapeString(run.Kind))
		for _, v := range []string{tokens(run.Saving), pct(run.SavingShare), pct(run.OfBound), pct(run.OfReachable), pct(run.OfOracle),
			fmt.Sprint(run.Prefetches), FormatBytes(run.WastedPrefetchBytes), fmt.Sprint(run.Pins),
			fmt.Sprintf("%.2f", run.ElapsedS)} {
			fmt.Fprintf(b, `<td class="n">%s</td>`, html.EscapeString(v))
		}
		fmt.Fprintf(b, `<td class="note">%s</td></tr>`, html.EscapeString(run.Note))
	}
	b.WriteString("</tbody></table>\n")

	fmt.Fprintf(b, "<h3>Saving missed against the clairvoyant bound, by cause%s (prefill tokens)</h3>\n", html.EscapeString(labelSuffix(p.Label)))
	rows := [][]string{}
	for _, run := range p.Runs {
		if l := run.Lost; l != nil {
			rows = append(rows, []string{run.Name, tokens(l.NoWakeup), tokens(l.WrongWorker), tokens(l.LoadNotFinished),
				tokens(l.EvictedBeforeUse), tokens(l.PinLapsed), tokens(l.Rest), tokens(l.Total)})
		}
	}
	numTable(b, "lost", []string{"run", "no wake-up", "wrong worker", "load unfinished", "evicted before use", "pin lapsed", "rest", "total"}, rows)

	fmt.Fprintf(b, "<h3>Saving missed against the clairvoyant bound, by mechanism%s (prefill tokens)</h3>\n", html.EscapeString(labelSuffix(p.Label)))
	rows = rows[:0]
	for _, run := range p.Runs {
		if m := run.Mechanism; m != nil {
			rows = append(rows, []string{run.Name, tokens(m.Retention), tokens(m.Placement), tokens(m.Timing),
				tokens(m.WrongWorker), tokens(m.NoSignal), tokens(m.Total)})
		}
	}
	if len(rows) == 0 {
		b.WriteString("<p>No run measured its mechanisms.</p>\n")
	}
	numTable(b, "mechanism", []string{"run", "retention: evicted from L3 before reuse", "placement: in L3, not on the announced turn's worker",
		"timing: load not finished", "wrong worker: the prefetch went elsewhere", "no signal: nothing announced the turn", "total"}, rows)
}

// numTable writes a table whose first column names the row and the
// rest are numbers.
func numTable(b *bytes.Buffer, class string, head []string, rows [][]string) {
	fmt.Fprintf(b, `<table class="%s"><thead><tr>`, class)
	for _, h := range head {
		fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(h))
	}
	b.WriteString("</tr></thead><tbody>")
	for _, row := range rows {
		b.WriteString("<tr>")
		for k, v := range row {
			if k == 0 {
				fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(v))
			} else {
				fmt.Fprintf(b, `<td class="n">%s</td>`, html.EscapeString(v))
			}
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>\n")
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
		return "GiB"
	case SweepBandwidth:
		return "bytes/s"
	}
	return "blocks"
}
