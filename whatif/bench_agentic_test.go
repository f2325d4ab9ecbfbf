package whatif

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hintstream/hintstream/loadtest/benchtrace"
)

// BenchmarkWhatifAgentic plays the whole table (every policy, peer,
// the oracle and both bounds, default cluster) on an agentic-shaped
// trace (loadtest/benchtrace: prompts growing turn by turn, median
// near 100K tokens), read as `hintstream whatif --trace` reads one
// (spooled to disk), and reports requests and prompt blocks a second.
// HINTSTREAM_WHATIF_AGENTIC_REQUESTS sets its length (default 1,600;
// the speed target is stated at 6,400 and 50,000).
//
//	HINTSTREAM_WHATIF_AGENTIC_REQUESTS=6400 go test -run '^$' -bench WhatifAgentic -benchtime 1x -count 3 ./whatif/
func BenchmarkWhatifAgentic(b *testing.B) {
	n := 1600
	if s := os.Getenv("HINTSTREAM_WHATIF_AGENTIC_REQUESTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("HINTSTREAM_WHATIF_AGENTIC_REQUESTS=%q: want a positive count", s)
		}
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "agentic.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := benchtrace.Write(f, benchtrace.Options{Requests: n}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	var rep *Report
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		src, err := SpoolTrace(f, DefaultBlockSize, false, dir)
		if err != nil {
			b.Fatal(err)
		}
		rep, err = Run(context.Background(), src, Options{Cluster: DefaultCluster(), TempDir: dir})
		src.Workload.Close()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	blocks := float64(rep.PromptTokens) / float64(DefaultBlockSize)
	b.ReportMetric(float64(rep.Requests)/rep.ElapsedS, "requests/s")
	b.ReportMetric(blocks/rep.ElapsedS, "blocks/s")
	b.ReportMetric(rep.ElapsedS, "s/table")
}
