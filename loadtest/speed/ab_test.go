package speed

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLatencyAB measures one change before and after in the same
// run: SPEED_BIN_A (e.g. hintstream built from the commit before) and
// the package's own build of hintstream (B) in SPEED_ROUNDS (default 5)
// alternated rounds of SPEED_DURATION (default 4 s) at 2,000 wake-ups/s,
// SPEED_JSON=1 for JSON requests. Reports the median of the per-round
// B/A ratios of CPU per wake-up and p99, and each side's median CPU.
//
//	go build -o /tmp/hintstream-before ./cmd/hintstream   # at the old commit
//	SPEED_BIN_A=/tmp/hintstream-before go test -run '^$' -bench LatencyAB -benchtime 1x ./loadtest/speed/
func BenchmarkLatencyAB(b *testing.B) {
	a := os.Getenv("SPEED_BIN_A")
	if a == "" {
		b.Skip("SPEED_BIN_A names the binary to compare with")
	}
	srv, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	rounds := 5
	if v := os.Getenv("SPEED_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("SPEED_ROUNDS %q", v)
		}
	}
	dur := envDuration(b, "SPEED_DURATION", 4*time.Second)
	run := func(bin string) LatencyResult {
		res, err := Latency(context.Background(), LatencyConfig{Binary: bin, NATSURL: srv.URL(), Duration: dur,
			JSON: os.Getenv("SPEED_JSON") != ""})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	med := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for i := 0; i < b.N; i++ {
		var cpuA, cpuB, cpuR, p99R []float64
		for r := range rounds {
			ra, rb := run(a), run(bins.Hintstream)
			b.Logf("round %d: A CPU %v p99 %v; B CPU %v p99 %v", r+1, ra.CPUPerWakeup, ra.P99, rb.CPUPerWakeup, rb.P99)
			cpuA, cpuB = append(cpuA, float64(ra.CPUPerWakeup)), append(cpuB, float64(rb.CPUPerWakeup))
			cpuR = append(cpuR, float64(rb.CPUPerWakeup)/float64(ra.CPUPerWakeup))
			p99R = append(p99R, float64(rb.P99)/float64(ra.P99))
		}
		b.ReportMetric(med(cpuA)/1e3, "A-cpu-µs/wakeup")
		b.ReportMetric(med(cpuB)/1e3, "B-cpu-µs/wakeup")
		b.ReportMetric(med(cpuR), "cpu-B/A")
		b.ReportMetric(med(p99R), "p99-B/A")
	}
}
