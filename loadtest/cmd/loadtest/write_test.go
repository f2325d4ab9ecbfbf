package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
	"github.com/hintstream/hintstream/loadtest/speed"
	"github.com/hintstream/hintstream/loadtest/value"
)

func latencyOf(p99 time.Duration, n int) speed.LatencyResult {
	h, lag := hdr.New(), hdr.New()
	for i := range n {
		h.Record(p99 * time.Duration(i+1) / time.Duration(n))
		lag.Record(time.Microsecond)
	}
	return speed.LatencyResult{Rate: 2000, Sent: n, Received: n, P50: p99 / 2, P99: p99, P999: p99, Max: p99,
		Latency: h, SendLag: lag, CPUPerWakeup: 250 * time.Microsecond}
}

// TestReportJudgesTargets: a run that meets the latency targets and
// misses the others says so, with by how much, in both files.
func TestReportJudgesTargets(t *testing.T) {
	dir := t.TempDir()
	r := results{started: time.Now(), loadBefore: "0.1 0.1 0.1", after: "0.2 0.2 0.2", command: "make loadtest",
		floor: latencyOf(1500*time.Microsecond, 100), hintstream: latencyOf(1800*time.Microsecond, 100),
		ingest: speed.IngestResult{Events: 1000, MeanSize: 397, EventsPerSec: 45000,
			Bench: []speed.BenchResult{{Msgs: 1000, Size: 397, MsgsPerSec: 100000, Command: "nats bench js ordered"}}},
		trace:     valueRuns(0.691, 0.5, 0.97),
		synthetic: valueRuns(0.95, 0.9, 1),
		haveSpeed: true, haveVal: true}
	out := filepath.Join(dir, "results")
	resultsFile := filepath.Join(dir, "RESULTS.md")
	notes := filepath.Join(dir, "NOTES.md")
	if err := os.WriteFile(notes, []byte("## Why\n\nBecause."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := write(options{out: out, results: resultsFile, notes: notes}, r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{
		"| hint latency p99 at 2000 wake-ups/s | 1.80 ms | floor 1.50 ms | ≤ 2 ms | yes |",
		"| hint latency p99 / floor p99 | 1.20 | – | ≤ 1.5 | yes |",
		"**no**, 45%, short by 45 points",
		"**no**, short by 0.9 points; see the lost-savings table",
		"| prefetch accuracy on the Mooncake trace, affinity on | 97.0% | affinity off 50.0% | ≥ 95% | yes |",
		"](latency-cdf.svg)",
		"## Why\n\nBecause.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	res, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "](results/latency-cdf.svg)") {
		t.Errorf("RESULTS.md chart links not relative to it:\n%s", res)
	}
	for _, f := range []string{"latency-cdf.svg", "value-trace.svg", "value-synthetic.svg"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(b)))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s: %v", f, err)
				}
				break
			}
		}
	}
}

func TestReportNeedsSomething(t *testing.T) {
	if err := write(options{out: t.TempDir()}, results{}); err != errNothing {
		t.Fatalf("err %v, want errNothing", err)
	}
}

// valueRuns are the four variants of a value run whose hintstream gets
// ofBound of the bound's saving and accuracy off and on without and with
// affinity.
func valueRuns(ofBound, off, on float64) []value.Result {
	var out []value.Result
	for _, v := range variants {
		acc := off
		if v.affinity {
			acc = on
		}
		out = append(out, value.Result{OfBound: ofBound, Affinity: v.affinity, TransferTime: v.transfer,
			NoHints:    value.ModeResult{Mode: value.ModeNoHints, Cost: 10},
			Hintstream: value.ModeResult{Mode: value.ModeHintstream, PrefetchAccuracy: acc},
			Oracle:     value.ModeResult{Mode: value.ModeOracle, Saving: 3},
			Bound:      value.ModeResult{Mode: value.ModeBound, Saving: 5}})
	}
	return out
}
