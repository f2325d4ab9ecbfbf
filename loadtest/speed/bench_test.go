package speed

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envDuration reads a duration override, e.g. SPEED_DURATION=60s.
func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s: %v", key, err)
		}
		return d
	}
	return def
}

// BenchmarkLatencyAt2000 is the latency profile: 2,000 wake-ups/s
// of 2,048-token prompts for 20 s (after a 2 s warm-up) against the floor
// and hintstream on one embedded server, in SPEED_ROUNDS (default 2)
// alternated rounds whose histograms are merged. Reports both p99s (µs) and
// their ratio. The targets (issue 17: p99 ≤ 1.25× the floor's in 4 of 5
// rounds, CPU per wake-up ≤ 1.10×) are judged per round by `make
// loadtest`; this benchmark is for profiles and quick looks.
// SPEED_DURATION and SPEED_RATE override the measured time and the rate;
// SPEED_CPUPROFILE=file saves a CPU profile of hintstream's measured
// window (a third run, so the figures stay unperturbed), and
// SPEED_FLOOR_CPUPROFILE=file one of the floor's whole run; SPEED_SLICE
// runs the two side by side in turns (see below).
//
//	go test -run '^$' -bench LatencyAt2000 -benchtime 1x ./loadtest/speed/
func BenchmarkLatencyAt2000(b *testing.B) {
	srv, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	dur := envDuration(b, "SPEED_DURATION", 20*time.Second)
	rate := 2000.0
	if v := os.Getenv("SPEED_RATE"); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil {
			b.Fatal(err)
		}
	}
	workers := 0 // the default, LatencyConfig's
	if v := os.Getenv("SPEED_WORKERS"); v != "" {
		if workers, err = strconv.Atoi(v); err != nil || workers < 1 {
			b.Fatalf("SPEED_WORKERS %q", v)
		}
	}
	run := func(target Target, bin, profile string) LatencyResult {
		var extra []string
		if p := os.Getenv("SPEED_FLOOR_CPUPROFILE"); p != "" && target == TargetFloor {
			extra = []string{"--cpuprofile", p}
		}
		res, err := Latency(context.Background(), LatencyConfig{Target: target, Binary: bin, NATSURL: srv.URL(),
			Rate: rate, Duration: dur, Workers: workers, Progress: os.Stderr, ProgressEvery: 5 * time.Second, CPUProfile: profile,
			ExtraArgs: extra})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%-10s p50 %v p99 %v p99.9 %v max %v mean %v; sent %d received %d lost %d; send %.0f/s recv %.0f/s; send lag p99 %v; CPU %v per wake-up",
			target, res.P50, res.P99, res.P999, res.Max, res.Mean, res.Sent, res.Received, res.Lost,
			res.SendRate, res.RecvRate, res.SendLag.ValueAtQuantile(0.99), res.CPUPerWakeup)
		return res
	}
	// SPEED_SLICE runs each round's two programs side by side in turns
	// of that length (Pair), as make loadtest does; unset, one after the
	// other.
	slice := envDuration(b, "SPEED_SLICE", 0)
	pair := func(profile string) (floor, hintstream LatencyResult) {
		var extra []string
		if p := os.Getenv("SPEED_FLOOR_CPUPROFILE"); p != "" {
			extra = []string{"--cpuprofile", p}
		}
		res, err := Pair(context.Background(), LatencyConfig{Target: TargetFloor, Binary: bins.Floor, ExtraArgs: extra,
			NATSURL: srv.URL(), Rate: rate, Duration: dur, Workers: workers, Slice: slice, Progress: os.Stderr,
			ProgressEvery: 5 * time.Second}, Program{Target: TargetHintstream, Binary: bins.Hintstream, CPUProfile: profile})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			b.Logf("%-10s p50 %v p99 %v p99.9 %v; lost %d; send lag p99 %v; CPU %v per wake-up (in turns of %v)",
				r.Target, r.P50, r.P99, r.P999, r.Lost, r.SendLag.ValueAtQuantile(0.99), r.CPUPerWakeup, slice)
		}
		return res[0], res[1]
	}
	rounds := envRounds(b, 2, 1)
	dur /= time.Duration(rounds)
	for i := 0; i < b.N; i++ {
		// Alternate the targets, so spells of CPU contention from other
		// programs on the machine fall on both alike.
		var fl, hs LatencyResult
		for range rounds {
			if slice > 0 {
				f, h := pair("")
				fl, hs = fl.Merge(f), hs.Merge(h)
				continue
			}
			fl = fl.Merge(run(TargetFloor, bins.Floor, ""))
			hs = hs.Merge(run(TargetHintstream, bins.Hintstream, ""))
		}
		b.Logf("merged: floor p99 %v, hintstream p99 %v", fl.P99, hs.P99)
		b.ReportMetric(float64(hs.P50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(hs.P99.Microseconds()), "p99-µs")
		b.ReportMetric(float64(hs.P999.Microseconds()), "p99.9-µs")
		b.ReportMetric(float64(fl.P50.Microseconds()), "floor-p50-µs")
		b.ReportMetric(float64(fl.P99.Microseconds()), "floor-p99-µs")
		b.ReportMetric(float64(hs.P99)/float64(fl.P99), "ratio")
		b.ReportMetric(float64(hs.Lost), "lost")
		b.ReportMetric(float64(fl.Lost), "floor-lost")
		b.ReportMetric(float64(hs.CPUPerWakeup.Nanoseconds())/1e3, "cpu-µs/wakeup")
		b.ReportMetric(float64(fl.CPUPerWakeup.Nanoseconds())/1e3, "floor-cpu-µs/wakeup")
		if p := os.Getenv("SPEED_CPUPROFILE"); p != "" {
			if slice > 0 {
				pair(p)
			} else {
				run(TargetHintstream, bins.Hintstream, p)
			}
		}
	}
}

// BenchmarkIngest is the ingestion profile: 500,000 Dynamo
// RouterEvent JSON stored events (4 blocks, ~395 B each) from 64 workers,
// pre-filled, then applied by the hintstream binary, beside `nats bench
// js ordered` over the same stream (before and after). Reports events/s,
// MB/s, the bench's msgs/s (mean of both) and the ratio (target ≥ 0.9).
// SPEED_EVENTS overrides the count; SPEED_ENGINE_BATCHES=1 publishes vLLM
// msgpack EventBatches instead of JSON; SPEED_CPUPROFILE=file profiles the
// apply (a second hintstream run, so the figures stay unperturbed);
// SPEED_ARGS adds flags to hintstream's command line in both (e.g.
// "--kv-apply-shards 1").
//
//	go test -run '^$' -bench Ingest -benchtime 1x ./loadtest/speed/
func BenchmarkIngest(b *testing.B) {
	root, err := RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	cli, err := EnsureNatsCLI(context.Background(), filepath.Join(root, "bin"))
	if err != nil {
		b.Fatal(err)
	}
	events := 500_000
	if v := os.Getenv("SPEED_EVENTS"); v != "" {
		if events, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for i := 0; i < b.N; i++ {
		res, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, NATSURL: srv.URL(),
			Events: events, NatsCLI: cli, Progress: os.Stderr, ProgressEvery: 5 * time.Second,
			EngineBatches: os.Getenv("SPEED_ENGINE_BATCHES") != "", ExtraArgs: strings.Fields(os.Getenv("SPEED_ARGS"))})
		if err != nil {
			b.Fatal(err)
		}
		var benchCPU time.Duration
		for _, r := range res.Bench {
			b.Logf("%s: %.0f msgs/s (%v), CPU %v per message", r.Command, r.MsgsPerSec, r.Duration, r.CPUPerMsg)
			benchCPU += r.CPUPerMsg / time.Duration(len(res.Bench))
		}
		b.Logf("hintstream applied %d events of %d B in %v: %.0f events/s, %.1f MB/s, CPU %v per event",
			res.Applied, res.MeanSize, res.Duration, res.EventsPerSec, res.MBPerSec, res.CPUPerEvent)
		b.ReportMetric(float64(res.CPUPerEvent.Nanoseconds())/1e3, "cpu-µs/event")
		b.ReportMetric(float64(benchCPU.Nanoseconds())/1e3, "nats-bench-cpu-µs/msg")
		b.ReportMetric(res.EventsPerSec, "events/s")
		b.ReportMetric(res.MBPerSec, "MB/s")
		b.ReportMetric(res.BenchMsgsPerSec(), "nats-bench-msgs/s")
		b.ReportMetric(res.EventsPerSec/res.BenchMsgsPerSec(), "ratio")
		if p := os.Getenv("SPEED_CPUPROFILE"); p != "" {
			if _, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, NATSURL: srv.URL(),
				Events: events, CPUProfile: p, EngineBatches: os.Getenv("SPEED_ENGINE_BATCHES") != "",
				ExtraArgs: strings.Fields(os.Getenv("SPEED_ARGS"))}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
