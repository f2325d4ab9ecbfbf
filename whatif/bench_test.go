package whatif

import (
	"context"
	"os"
	"testing"

	"github.com/hintstream/hintstream/whatif/workload"
)

// BenchmarkWhatif plays a trace (HINTSTREAM_WHATIF_TRACE, default the
// synthetic one) through every policy, the oracle and the bound at the
// default cluster, and reports requests per second.
//
//	go test -run '^$' -bench Whatif -benchtime 1x -count 3 ./whatif/
func BenchmarkWhatif(b *testing.B) {
	path := os.Getenv("HINTSTREAM_WHATIF_TRACE")
	if path == "" {
		path = tracePath(b)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := workload.ReadRecords(f, DefaultBlockSize, false)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	var rep *Report
	for b.Loop() {
		if rep, err = Run(context.Background(), Source{Name: path, Records: tr.Records}, Options{Cluster: DefaultCluster()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rep.RequestsPerS, "requests/s")
	b.ReportMetric(float64(rep.Requests), "requests")
}
