package speed

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
)

// A short run at 200/s against each target, on one server: every hint
// arrives, and the quantiles are ordered and plausible.
func TestLatencySmall(t *testing.T) {
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, target := range []Target{TargetFloor, TargetHintstream} {
		t.Run(string(target), func(t *testing.T) {
			bin := map[Target]string{TargetFloor: bins.Floor, TargetHintstream: bins.Hintstream}[target]
			var prog bytes.Buffer
			res, err := Latency(context.Background(), LatencyConfig{Target: target, Binary: bin, NATSURL: srv.URL(),
				Rate: 200, Duration: time.Second, Warmup: 250 * time.Millisecond, Workers: 3,
				Progress: &prog, ProgressEvery: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: p50 %v p99 %v p99.9 %v max %v, sent %d received %d, send rate %.0f/s, send lag p50 %v p99 %v",
				target, res.P50, res.P99, res.P999, res.Max, res.Sent, res.Received, res.SendRate,
				res.SendLag.ValueAtQuantile(0.5), res.SendLag.ValueAtQuantile(0.99))
			if res.Sent != 200 || res.Received != 200 || res.Lost != 0 || res.Duplicates != 0 {
				t.Fatalf("sent %d received %d lost %d dups %d", res.Sent, res.Received, res.Lost, res.Duplicates)
			}
			if res.Latency.Count() != 200 {
				t.Fatalf("histogram holds %d, want 200", res.Latency.Count())
			}
			// Sane, not fast: this runs with the race detector on 2 shared
			// cores; the figures come from the benchmarks.
			if res.P50 <= 0 || res.P50 > time.Second || res.P50 > res.P99 || res.P99 > res.P999 || res.P999 > res.Max {
				t.Fatalf("implausible quantiles p50 %v p99 %v p99.9 %v max %v", res.P50, res.P99, res.P999, res.Max)
			}
			if res.SendRate <= 0 || res.SendRate > 250 || res.SendLag.Count() != 200 {
				t.Fatalf("send rate %.0f/s (at most 200 scheduled), %d send lags", res.SendRate, res.SendLag.Count())
			}
			if !strings.Contains(prog.String(), "latency "+string(target)) {
				t.Fatalf("no progress line: %q", prog.String())
			}
			if target == TargetHintstream && res.Counters["hintstream_hints_sent_total"] == 0 &&
				sumFamily(res.Counters, "hintstream_hints_sent_total") < 250 {
				t.Fatalf("hintstream's counters say %v hints sent", res.Counters)
			}
		})
	}
}

func TestLatencyConfigErrors(t *testing.T) {
	if _, err := Latency(context.Background(), LatencyConfig{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no binary: %v", err)
	}
	if _, err := Latency(context.Background(), LatencyConfig{Binary: "x", Target: "y"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown target: %v", err)
	}
}

func TestLatencyResultMerge(t *testing.T) {
	a := LatencyResult{Sent: 3, Received: 3, SendRate: 100, CPUPerWakeup: 10 * time.Microsecond,
		Latency: hdr.New(), SendLag: hdr.New(), Counters: map[string]float64{"x": 1}}
	b := LatencyResult{Sent: 1, Received: 0, Lost: 1, SendRate: 200, CPUPerWakeup: 50 * time.Microsecond,
		Latency: hdr.New(), SendLag: hdr.New(), Counters: map[string]float64{"x": 2}}
	for _, d := range []time.Duration{1, 2, 3} {
		a.Latency.Record(d * time.Millisecond)
	}
	b.Latency.Record(time.Second)
	m := LatencyResult{}.Merge(a).Merge(b)
	if m.Sent != 4 || m.Received != 3 || m.Lost != 1 || m.Latency.Count() != 4 || m.Max != time.Second ||
		m.P50 < 2*time.Millisecond || m.P50 > 2002*time.Microsecond || m.SendRate != 125 || m.CPUPerWakeup != 20*time.Microsecond || m.Counters["x"] != 3 {
		t.Fatalf("merged %+v", m)
	}
	if a.Latency.Count() != 3 {
		t.Fatal("Merge changed its receiver's histogram")
	}
}
