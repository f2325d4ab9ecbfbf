package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hintstream/hintstream/loadtest/report"
	"github.com/hintstream/hintstream/loadtest/value"
)

// The targets.
const (
	targetP99      = 2 * time.Millisecond
	targetP99Ratio = 1.5
	targetIngest   = 0.9
	// With affinity on, on the Mooncake trace (issue 16).
	targetAccuracy = 0.95
	targetOfBound  = 0.7
)

func write(o options, r results) error {
	if !r.haveSpeed && !r.haveVal {
		return errNothing
	}
	rep := report.Report{
		Title: "hintstream load test",
		Intro: fmt.Sprintf("Run %s on %s/%s, %d CPUs, %s. Load average before %s, after %s "+
			"(other programs' load is the first suspect when latency swings).\n\nCommand: `%s`",
			r.started.UTC().Format(time.RFC3339), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(),
			r.loadBefore, r.after, r.command),
	}
	rep.Sections = append(rep.Sections, targets(r))
	if r.haveSpeed {
		rep.Sections = append(rep.Sections, latency(r), ingestion(r))
	}
	if r.haveVal {
		rep.Sections = append(rep.Sections, hintValue("Hint value: Mooncake trace", "value-trace.svg", r.trace, r.valueWall[0]),
			hintValue("Hint value: synthetic agentic sessions", "value-synthetic.svg", r.synthetic, r.valueWall[1]))
	}
	if o.notes != "" {
		b, err := os.ReadFile(o.notes)
		if err != nil {
			return err
		}
		rep.Sections = append(rep.Sections, report.Section{Markdown: string(b)})
	}
	if err := report.Write(o.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loadtest: report in %s/summary.md\n", o.out)
	if o.results == "" {
		return nil
	}
	// The same markdown, its chart links made relative to the results
	// file so both render.
	md, err := os.ReadFile(filepath.Join(o.out, "summary.md"))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(o.results), o.out)
	if err != nil {
		return err
	}
	s := strings.ReplaceAll(string(md), "](", "]("+filepath.ToSlash(rel)+"/")
	s = strings.ReplaceAll(s, "]("+filepath.ToSlash(rel)+"/http", "](http")
	return os.WriteFile(o.results, []byte(s), 0o644)
}

func met(ok bool, miss string) string {
	if ok {
		return "yes"
	}
	return "**no**, " + miss
}

func targets(r results) report.Section {
	t := report.Table{Header: []string{"measure", "hintstream", "baseline in this run", "target", "met?"}}
	if r.haveSpeed {
		hs, fl := r.hintstream.P99, r.floor.P99
		ratio := float64(hs) / float64(max(fl, 1))
		t.Rows = append(t.Rows,
			[]string{fmt.Sprintf("hint latency p99 at %.0f wake-ups/s", r.hintstream.Rate), ms(hs), "floor " + ms(fl), "≤ 2 ms",
				met(hs <= targetP99, fmt.Sprintf("%.1f× the target", float64(hs)/float64(targetP99)))},
			[]string{"hint latency p99 / floor p99", fmt.Sprintf("%.2f", ratio), "–", "≤ 1.5",
				met(ratio <= targetP99Ratio, fmt.Sprintf("%.2f× the allowed ratio", ratio/targetP99Ratio))})
		b := r.ingest.BenchMsgsPerSec()
		share := r.ingest.EventsPerSec / max(b, 1)
		t.Rows = append(t.Rows, []string{fmt.Sprintf("KV-event ingestion (%d B events)", r.ingest.MeanSize),
			fmt.Sprintf("%.0f events/s", r.ingest.EventsPerSec), fmt.Sprintf("nats bench js ordered %.0f msgs/s", b),
			"≥ 90% of nats bench", met(share >= targetIngest, fmt.Sprintf("%.0f%%, short by %.0f points", 100*share, 100*(targetIngest-share)))})
	}
	if r.haveVal && len(r.trace) > 0 {
		h := r.trace[len(r.trace)-1] // affinity and transfer time on
		acc, of := h.Hintstream.PrefetchAccuracy, h.OfBound
		t.Rows = append(t.Rows,
			[]string{"prefetch accuracy on the Mooncake trace, affinity on", fmt.Sprintf("%.1f%%", 100*acc),
				fmt.Sprintf("affinity off %.1f%%", 100*r.trace[1].Hintstream.PrefetchAccuracy), "≥ 95%",
				met(acc >= targetAccuracy, fmt.Sprintf("short by %.1f points", 100*(targetAccuracy-acc)))},
			[]string{"prefill saved on the Mooncake trace, affinity on, share of the clairvoyant bound's", fmt.Sprintf("%.1f%%", 100*of),
				fmt.Sprintf("bound saves %.0f token-equivalents", h.Bound.Saving), "≥ 70%",
				met(of >= targetOfBound, fmt.Sprintf("short by %.1f points; see the lost-savings table", 100*(targetOfBound-of)))})
	}
	return report.Section{Heading: "Targets", Tables: []report.Table{t}}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func latency(r results) report.Section {
	t := report.Table{Header: []string{"program", "sent", "received", "lost", "p50", "p99", "p99.9", "max", "publisher lag p99", "CPU per wake-up"}}
	for _, row := range []struct {
		name string
		l    latencyRow
	}{{"floor", rowOf(r.floor.Sent, r.floor.Received, r.floor.Lost, r.floor.P50, r.floor.P99, r.floor.P999, r.floor.Max,
		r.floor.SendLag.ValueAtQuantile(0.99), r.floor.CPUPerWakeup)},
		{"hintstream", rowOf(r.hintstream.Sent, r.hintstream.Received, r.hintstream.Lost, r.hintstream.P50, r.hintstream.P99,
			r.hintstream.P999, r.hintstream.Max, r.hintstream.SendLag.ValueAtQuantile(0.99), r.hintstream.CPUPerWakeup)}} {
		t.Rows = append(t.Rows, append([]string{row.name}, row.l...))
	}
	return report.Section{
		Heading: "Hint latency",
		Markdown: fmt.Sprintf("Open-loop wake-ups (2,048-token prompts) at %.0f/s, from each wake-up's scheduled publish time to its "+
			"kv.prefetch at a real ZMQ PULL socket, both programs on one embedded nats-server, alternated rounds merged. "+
			"The floor is the least any such program does: consume, decode, encode the same envelope, send.", r.hintstream.Rate),
		Tables: []report.Table{t},
		Charts: []report.Chart{report.CDF{File: "latency-cdf.svg", Title: "Hint latency CDF (tail scale)", Tail: true,
			Series:  []report.CDFSeries{report.SeriesOf("floor", r.floor.Latency), report.SeriesOf("hintstream", r.hintstream.Latency)},
			Markers: []report.Marker{{Label: "2 ms target", X: targetP99}}}},
	}
}

type latencyRow []string

func rowOf(sent, recv, lost int, p50, p99, p999, mx, lag, cpu time.Duration) latencyRow {
	return latencyRow{fmt.Sprint(sent), fmt.Sprint(recv), fmt.Sprint(lost), ms(p50), ms(p99), ms(p999), ms(mx), ms(lag),
		fmt.Sprintf("%.0f µs", float64(cpu)/float64(time.Microsecond))}
}

func ingestion(r results) report.Section {
	t := report.Table{Header: []string{"reader", "messages", "size", "msgs/s", "CPU per message"}}
	in := r.ingest
	t.Rows = append(t.Rows, []string{"hintstream (decode + index apply)", fmt.Sprint(in.Events), fmt.Sprintf("%d B", in.MeanSize),
		fmt.Sprintf("%.0f", in.EventsPerSec), fmt.Sprintf("%.1f µs", float64(in.CPUPerEvent)/float64(time.Microsecond))})
	for i, b := range in.Bench {
		when := map[int]string{0: "before", 1: "after"}[i]
		t.Rows = append(t.Rows, []string{"nats bench js ordered (" + when + ")", fmt.Sprint(b.Msgs), fmt.Sprintf("%d B", b.Size),
			fmt.Sprintf("%.0f", b.MsgsPerSec), fmt.Sprintf("%.1f µs", float64(b.CPUPerMsg)/float64(time.Microsecond))})
	}
	var cmds []string
	for _, b := range in.Bench {
		cmds = append(cmds, "`"+b.Command+"`")
	}
	return report.Section{
		Heading: "KV-event ingestion",
		Markdown: "Dynamo RouterEvent JSON stored events (4 blocks each, 64 workers, chained) pre-filled in one stream; " +
			"hintstream's time from its first to its last applied event, against `nats bench js ordered` reading the same " +
			"stream just before and just after. Bench commands: " + strings.Join(cmds, ", "),
		Tables: []report.Table{t},
	}
}

func hintValue(heading, file string, runs []value.Result, wall time.Duration) report.Section {
	if len(runs) == 0 {
		return report.Section{Heading: heading, Markdown: "not run"}
	}
	v := runs[len(runs)-1] // the headline: affinity and transfer time on
	var b strings.Builder
	b.WriteString("Every variant, each with its own no-hints run and bound (the bound has no transfer time, so it is the same in all four):\n\n")
	b.WriteString("| affinity | transfer time | hintstream saving | share of the bound's | prefetches accurate | turns pinned | tokens still loading | next-turn oracle saving | oracle accuracy | bound saving | hintstream run wall time |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range runs {
		h, o := r.Hintstream, r.Oracle
		fmt.Fprintf(&b, "| %s | %s | %.0f (%.1f%%) | **%.1f%%** | %.1f%% | %d | %d | %.0f (%.1f%%) | %.1f%% | %.0f (%.1f%%) | %v |\n",
			onOff(r.Affinity), onOff(r.TransferTime), h.Saving, 100*h.Saving/r.NoHints.Cost, 100*r.OfBound,
			100*h.PrefetchAccuracy, h.Pinned, h.UnreadyTokens, o.Saving, 100*o.Saving/r.NoHints.Cost, 100*o.PrefetchAccuracy,
			r.Bound.Saving, 100*r.Bound.Saving/r.NoHints.Cost, h.Elapsed.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "\nAll %d variants (each no hints, next-turn oracle and hintstream) took %v.\n", len(runs), wall.Round(time.Second))
	fmt.Fprintf(&b, "\n### Affinity and transfer time on\n\n%s", v.Markdown())
	fmt.Fprintf(&b, "\n### Affinity off, transfer time on\n\n%s", runs[1].Hintstream.Lost.Markdown("hintstream"))
	modes := []value.ModeResult{v.NoHints, v.Hintstream, v.Oracle, v.Bound}
	var groups []string
	dev, l3, rec := report.BarSeries{Label: "device hit"}, report.BarSeries{Label: "L3 hit"}, report.BarSeries{Label: "recomputed"}
	for _, m := range modes {
		groups = append(groups, string(m.Mode))
		dev.Values = append(dev.Values, float64(m.DeviceHitTokens)/1e6)
		l3.Values = append(l3.Values, float64(m.L3HitTokens)/1e6)
		rec.Values = append(rec.Values, float64(m.RecomputedTokens)/1e6)
	}
	return report.Section{Heading: heading, Markdown: b.String(),
		Charts: []report.Chart{report.Bars{File: file, Title: heading + ": prompt tokens by source (affinity and transfer time on)",
			YLabel: "million tokens", Groups: groups, Series: []report.BarSeries{dev, l3, rec}}}}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
