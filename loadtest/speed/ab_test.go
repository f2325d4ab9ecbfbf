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
	a, srv, rounds := abSetup(b)
	dur := envDuration(b, "SPEED_DURATION", 4*time.Second)
	run := func(bin string) LatencyResult {
		res, err := Latency(context.Background(), LatencyConfig{Binary: bin, NATSURL: srv.URL(), Duration: dur,
			JSON: os.Getenv("SPEED_JSON") != ""})
		if err != nil {
			b.Fatal(err)
		}
		return res
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
		b.ReportMetric(medianOf(cpuA)/1e3, "A-cpu-µs/wakeup")
		b.ReportMetric(medianOf(cpuB)/1e3, "B-cpu-µs/wakeup")
		b.ReportMetric(medianOf(cpuR), "cpu-B/A")
		b.ReportMetric(medianOf(p99R), "p99-B/A")
	}
}

// BenchmarkIngestAB is BenchmarkLatencyAB for ingestion: SPEED_EVENTS
// (default 200,000) Dynamo RouterEvent JSON events (SPEED_ENGINE_BATCHES=1:
// vLLM msgpack batches) applied by the package's hintstream (B) and
// SPEED_BIN_A in each of SPEED_ROUNDS (default 5) rounds; reports the
// median per-round B/A ratios of events/s and CPU per event.
//
//	SPEED_BIN_A=/tmp/hintstream-before go test -run '^$' -bench IngestAB -benchtime 1x ./loadtest/speed/
func BenchmarkIngestAB(b *testing.B) {
	a := os.Getenv("SPEED_BIN_A")
	if a == "" {
		b.Skip("SPEED_BIN_A names the binary to compare with")
	}
	rounds, events := envRounds(b, 5, 2), 200_000
	var err error
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
		res, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, Also: a, NATSURL: srv.URL(),
			Events: events, Rounds: rounds, EngineBatches: os.Getenv("SPEED_ENGINE_BATCHES") != ""})
		if err != nil {
			b.Fatal(err)
		}
		var rate, cpu, cpuA, cpuB []float64
		for r, x := range res.Rounds {
			b.Logf("round %d: A %.0f events/s CPU %v; B %.0f events/s CPU %v", r+1, x.Also.EventsPerSec, x.Also.CPUPerEvent,
				x.EventsPerSec, x.CPUPerEvent)
			rate = append(rate, x.EventsPerSec/x.Also.EventsPerSec)
			cpu = append(cpu, float64(x.CPUPerEvent)/float64(x.Also.CPUPerEvent))
			cpuA, cpuB = append(cpuA, float64(x.Also.CPUPerEvent)), append(cpuB, float64(x.CPUPerEvent))
		}
		b.ReportMetric(medianOf(rate), "rate-B/A")
		b.ReportMetric(medianOf(cpu), "cpu-B/A")
		b.ReportMetric(medianOf(cpuA)/1e3, "A-cpu-µs/event")
		b.ReportMetric(medianOf(cpuB)/1e3, "B-cpu-µs/event")
	}
}

// medianOf is the middle value of xs (the upper one for an even count).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkTurnsNoise is the floor against itself by both ways of
// running a round, in one run: one program after the other (Latency
// twice), and side by side in turns (Pair). Each of SPEED_ROUNDS
// (default 5) rounds runs both ways, in alternated order, SPEED_DURATION
// (default 8 s) per program, in turns of SPEED_SLICE (default
// DefaultSlice) with SPEED_GAP after each (default none); it logs every
// round's p99 ratio second/first
// and reports how many rounds of each way pass the p99 target's rule
// (≤ 1.25): the rule's resolution on this machine, by method.
//
//	go test -run '^$' -bench TurnsNoise -benchtime 1x ./loadtest/speed/
func BenchmarkTurnsNoise(b *testing.B) {
	srv := benchServer(b)
	rounds := envRounds(b, 5, 1)
	cfg := LatencyConfig{Target: TargetFloor, Binary: bins.Floor, NATSURL: srv.URL(),
		Duration: envDuration(b, "SPEED_DURATION", 8*time.Second), Slice: envDuration(b, "SPEED_SLICE", 0),
		Gap: envDuration(b, "SPEED_GAP", 0)}
	floor := Program{Target: TargetFloor, Binary: bins.Floor}
	apart := func() [2]LatencyResult {
		var out [2]LatencyResult
		for k := range out {
			var err error
			if out[k], err = Latency(context.Background(), cfg); err != nil {
				b.Fatal(err)
			}
		}
		return out
	}
	turns := func() [2]LatencyResult {
		out, err := Pair(context.Background(), cfg, floor)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	for i := 0; i < b.N; i++ {
		var pass [2]int
		var ratios [2][]float64
		for r := range rounds {
			ways := []func() [2]LatencyResult{apart, turns}
			if r%2 == 1 {
				ways = []func() [2]LatencyResult{turns, apart}
			}
			for k, way := range ways {
				w := k
				if r%2 == 1 {
					w = 1 - k
				}
				res := way()
				q := float64(res[1].P99) / float64(res[0].P99)
				ratios[w] = append(ratios[w], q)
				if q <= 1.25 {
					pass[w]++
				}
				b.Logf("round %d, %s: p99 %v then %v (%.2f), CPU %v then %v, publisher lag p99 %v then %v", r+1,
					[]string{"one after the other", "in turns"}[w], res[0].P99, res[1].P99, q,
					res[0].CPUPerWakeup, res[1].CPUPerWakeup,
					res[0].SendLag.ValueAtQuantile(0.99), res[1].SendLag.ValueAtQuantile(0.99))
			}
		}
		b.Logf("p99 ratios one after the other %.2f; in turns %.2f", ratios[0], ratios[1])
		b.ReportMetric(float64(pass[0]), "apart-rounds-pass")
		b.ReportMetric(float64(pass[1]), "turns-rounds-pass")
		b.ReportMetric(medianOf(ratios[0]), "apart-median-p99-ratio")
		b.ReportMetric(medianOf(ratios[1]), "turns-median-p99-ratio")
	}
}

// BenchmarkPairAB is BenchmarkLatencyAB through Pair: in each of
// SPEED_ROUNDS (default 5) rounds, SPEED_BIN_A and then SPEED_BIN_B
// (default the package's own hintstream; the order alternates by round) each run in turns
// beside the floor (SPEED_SLICE, default DefaultSlice), SPEED_DURATION
// (default 8 s) each. A program's ratio to the floor beside it is
// steadier than its figure alone, so B/A is read as the ratio of the two
// ratios; it reports their medians for CPU per wake-up and p99.
//
//	SPEED_BIN_A=/tmp/hintstream-before go test -run '^$' -bench PairAB -benchtime 1x ./loadtest/speed/
func BenchmarkPairAB(b *testing.B) {
	a, srv, rounds := abSetup(b)
	cfg := LatencyConfig{Target: TargetFloor, Binary: bins.Floor, NATSURL: srv.URL(),
		Duration: envDuration(b, "SPEED_DURATION", 8*time.Second), Slice: envDuration(b, "SPEED_SLICE", 0),
		JSON: os.Getenv("SPEED_JSON") != ""}
	// beside returns bin's CPU and p99 ratios to the floor beside it.
	beside := func(bin string) (cpu, p99 float64) {
		res, err := Pair(context.Background(), cfg, Program{Target: TargetHintstream, Binary: bin})
		if err != nil {
			b.Fatal(err)
		}
		return float64(res[1].CPUPerWakeup) / float64(res[0].CPUPerWakeup), float64(res[1].P99) / float64(res[0].P99)
	}
	for i := 0; i < b.N; i++ {
		var cpuA, cpuB, cpuR, p99R []float64
		for r := range rounds {
			bins := []string{a, bins.Hintstream}
			if v := os.Getenv("SPEED_BIN_B"); v != "" {
				bins[1] = v
			}
			if r%2 == 1 {
				bins[0], bins[1] = bins[1], bins[0]
			}
			var c, p [2]float64
			for k, bin := range bins {
				c[k], p[k] = beside(bin)
			}
			if r%2 == 1 {
				c[0], c[1], p[0], p[1] = c[1], c[0], p[1], p[0]
			}
			b.Logf("round %d: A CPU/floor %.3f p99/floor %.2f; B CPU/floor %.3f p99/floor %.2f", r+1, c[0], p[0], c[1], p[1])
			cpuA, cpuB = append(cpuA, c[0]), append(cpuB, c[1])
			cpuR, p99R = append(cpuR, c[1]/c[0]), append(p99R, p[1]/p[0])
		}
		b.ReportMetric(medianOf(cpuA), "A-cpu/floor")
		b.ReportMetric(medianOf(cpuB), "B-cpu/floor")
		b.ReportMetric(medianOf(cpuR), "cpu-B/A")
		b.ReportMetric(medianOf(p99R), "p99-B/A")
	}
}

// benchServer starts an embedded nats-server for b, closed when b ends.
func benchServer(b *testing.B) *Server {
	srv, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	return srv
}

// envRounds is SPEED_ROUNDS (at least least), default def.
func envRounds(b *testing.B, def, least int) int {
	v := os.Getenv("SPEED_ROUNDS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("SPEED_ROUNDS %q (at least %d)", v, least)
	}
	return n
}

// abSetup is an A/B benchmark's start: SPEED_BIN_A (skipping without
// it), an embedded server and SPEED_ROUNDS (default 5).
func abSetup(b *testing.B) (binA string, srv *Server, rounds int) {
	binA = os.Getenv("SPEED_BIN_A")
	if binA == "" {
		b.Skip("SPEED_BIN_A names the binary to compare with")
	}
	return binA, benchServer(b), envRounds(b, 5, 1)
}
