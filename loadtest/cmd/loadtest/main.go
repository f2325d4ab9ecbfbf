// Command loadtest is `make loadtest`: it measures hintstream beside its
// yardsticks, in one run on one machine, and writes a report directory
// (summary.md and SVG charts):
//
//   - hint latency at --rate wake-ups/s, hintstream against the floor
//     (loadtest/cmd/floor), in --rounds alternated rounds on one embedded
//     server, for msgpack and for JSON requests (the floor decodes the
//     same format); in each round both run side by side and the wake-ups
//     go to each in --slice turns (speed.Pair), so the machine's stalls
//     fall on both; each round is reported and every target is judged on
//     the median of the per-round ratios;
//   - KV-event ingestion, hintstream against `nats bench js ordered`
//     reading the same stream, in --rounds rounds of bench then
//     hintstream, for Dynamo RouterEvent JSON and vLLM msgpack batches;
//   - the prefill hints save on the Mooncake trace (--trace) and on
//     synthetic agentic sessions: no hints, hintstream and the next-turn
//     oracle against the clairvoyant bound, each with and without prefetch
//     affinity and with and without transfer time (--kv-bytes-per-token,
//     --l3-bandwidth).
//
// The default profile is 5 rounds of 8 s per target and format (--duration
// 40 s per target and format; with warm-ups, start-ups and drains about
// 4 min), 5 rounds of the floor against itself (--noise-rounds; about
// 1.5 min), 5 ingestion rounds per format (about 1 min) and about 2 min of
// value runs (four variants of each workload); builds and the natscli
// install come on top. --skip-value leaves the last out.
package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/loadtest/speed"
	"github.com/hintstream/hintstream/loadtest/value"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

type options struct {
	out, results, trace, bin string
	rate                     float64
	duration, slice, gap     time.Duration
	rounds, noiseRounds      int
	ingestEvents             int
	skipValue, skipSpeed     bool
	applyShards              string // comma-separated --kv-apply-shards values
	kvBytesPerToken          int
	l3Bandwidth              float64 // GB/s
}

func main() {
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ExitOnError)
	fs.StringVar(&o.out, "out", "loadtest/out", "report directory (summary.md and charts)")
	fs.StringVar(&o.results, "results", "", "also write the report as this markdown file, its chart links pointing into --out (e.g. loadtest/RESULTS.md)")
	fs.StringVar(&o.trace, "trace", "", "Mooncake-format trace (default the synthetic trace in testdata/data)")
	fs.StringVar(&o.bin, "bin", "bin", "where the binaries and natscli are built")
	fs.Float64Var(&o.rate, "rate", 2000, "wake-ups per second of the latency runs")
	// 8 s rounds (16,000 wake-ups each at 2,000/s): a round's p99 is then
	// its 160th-worst hint, so one machine stall of ~100 ms on these
	// shared 2 cores does not decide it alone, as it would in 4 s rounds.
	fs.DurationVar(&o.duration, "duration", 40*time.Second, "measured time of each latency target, split over --rounds")
	fs.DurationVar(&o.slice, "slice", speed.DefaultSlice, "in each latency round both programs run side by side and the wake-ups go to each in turns this long (each turn followed by --gap with none), so the machine's stalls fall on both alike; 0: one program after the other")
	fs.DurationVar(&o.gap, "gap", 0, "a pause after each turn (see --slice)")
	fs.IntVar(&o.rounds, "rounds", 5, "alternated floor/hintstream (and bench/hintstream) rounds, so spells of contention fall on both; targets are judged on the median of per-round ratios")
	fs.IntVar(&o.noiseRounds, "noise-rounds", 5, "after the latency rounds, this many rounds of the floor against itself (msgpack requests): how far two runs of one program differ on this machine (0: none)")
	fs.IntVar(&o.ingestEvents, "ingest-events", 200000, "KV events pre-filled for the ingestion rounds (each round applies all of them)")
	fs.StringVar(&o.applyShards, "apply-shards", "1,2", "after the ingestion rounds, 3 more rounds of the Dynamo JSON with hintstream's --kv-apply-shards at each of these (comma-separated; empty: none)")
	fs.BoolVar(&o.skipValue, "skip-value", false, "leave out the hint-value simulations")
	fs.BoolVar(&o.skipSpeed, "skip-speed", false, "leave out the latency and ingestion runs")
	fs.IntVar(&o.kvBytesPerToken, "kv-bytes-per-token", schemas.DefaultKVBytesPerToken, "KV bytes per token for L3 → device transfer time (default: Qwen3-8B, as run assumes)")
	fs.Float64Var(&o.l3Bandwidth, "l3-bandwidth", schemas.DefaultL3Bandwidth/1e9, "L3 → device link bandwidth in GB/s, for transfer time")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// results gathers what the report shows.
type results struct {
	started           time.Time
	loadBefore, after string
	// floor and hintstream are the msgpack rounds merged, for the CDF.
	floor, hintstream speed.LatencyResult
	// rounds are the latency rounds of each request format, ingests the
	// ingestion rounds of each event format (both indexed as formats).
	rounds [2][]latencyRound
	noise  []noiseRound // the floor against itself
	// slice and gap are the latency rounds' turns (slice 0: none).
	slice, gap time.Duration
	ingests    [2]speed.IngestResult
	ingest     speed.IngestResult // ingests[0], the Dynamo JSON
	shards     []shardRun         // the --apply-shards passes
	// trace and synthetic are the value runs, one per variant (see
	// variants); the headline is affinity and transfer time on.
	trace, synthetic   []simulate.Result
	valueWall          [2]time.Duration
	haveSpeed, haveVal bool
	command            string
}

func run(ctx context.Context, o options, progress io.Writer) error {
	root, err := speed.RepoRoot()
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	if o.trace == "" {
		if o.trace, err = defaultTrace(root); err != nil {
			return err
		}
		defer os.Remove(o.trace)
	}
	r := results{started: time.Now(), loadBefore: loadAvg(), command: "go run ./loadtest/cmd/loadtest " + strings.Join(os.Args[1:], " ")}
	if !o.skipSpeed {
		if err := runSpeed(ctx, o, progress, &r); err != nil {
			return err
		}
	}
	if !o.skipValue {
		if err := runValue(ctx, o, progress, &r); err != nil {
			return err
		}
	}
	r.after = loadAvg()
	return write(o, r)
}

func runSpeed(ctx context.Context, o options, progress io.Writer, r *results) error {
	fmt.Fprintln(progress, "loadtest: building hintstream and the floor; installing natscli", speed.NatsCLIVersion)
	bins, err := speed.Build(ctx, o.bin)
	if err != nil {
		return err
	}
	cli, err := speed.EnsureNatsCLI(ctx, o.bin)
	if err != nil {
		return err
	}
	srv, err := speed.StartServer("")
	if err != nil {
		return err
	}
	defer srv.Close()
	if o.rounds < 1 {
		return fmt.Errorf("--rounds must be at least 1")
	}
	per := o.duration / time.Duration(o.rounds)
	r.slice, r.gap = o.slice, o.gap
	base := speed.LatencyConfig{NATSURL: srv.URL(), Rate: o.rate, Duration: per, Slice: o.slice, Gap: o.gap,
		Progress: progress, ProgressEvery: 5 * time.Second}
	program := func(t speed.Target) speed.Program {
		if t == speed.TargetFloor {
			return speed.Program{Target: t, Binary: bins.Floor}
		}
		return speed.Program{Target: t, Binary: bins.Hintstream}
	}
	for i := range o.rounds {
		for f, format := range formats {
			order := roundOrder(i)
			fmt.Fprintf(progress, "loadtest: latency round %d/%d, %s requests, %s then %s at %.0f wake-ups/s for %v each%s\n",
				i+1, o.rounds, format.request, order[0], order[1], o.rate, per, turnsNote(o.slice, o.gap))
			cfg := base
			cfg.JSON = format.json
			res, err := latencyPair(ctx, cfg, program(order[0]), program(order[1]), o.slice)
			if err != nil {
				return err
			}
			var round latencyRound
			for k, t := range order {
				if t == speed.TargetFloor {
					round.floor = res[k]
				} else {
					round.hintstream = res[k]
				}
			}
			r.rounds[f] = append(r.rounds[f], round)
			if f == 0 {
				r.floor, r.hintstream = r.floor.Merge(round.floor), r.hintstream.Merge(round.hintstream)
			}
		}
	}
	for i := range o.noiseRounds {
		fmt.Fprintf(progress, "loadtest: noise round %d/%d, the floor against itself, msgpack requests%s\n",
			i+1, o.noiseRounds, turnsNote(o.slice, o.gap))
		res, err := latencyPair(ctx, base, program(speed.TargetFloor), program(speed.TargetFloor), o.slice)
		if err != nil {
			return err
		}
		r.noise = append(r.noise, noiseRound{first: res[0], second: res[1]})
	}
	for f, format := range eventFormats {
		fmt.Fprintf(progress, "loadtest: ingestion of %d %s, %d rounds beside nats bench js ordered\n",
			o.ingestEvents, format.name, o.rounds)
		r.ingests[f], err = speed.Ingest(ctx, speed.IngestConfig{Binary: bins.Hintstream, NATSURL: srv.URL(),
			Events: o.ingestEvents, EngineBatches: format.engine, Rounds: o.rounds, NatsCLI: cli,
			Progress: progress, ProgressEvery: 5 * time.Second})
		if err != nil {
			return err
		}
	}
	r.ingest = r.ingests[0]
	for _, f := range strings.Split(o.applyShards, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("--apply-shards: %q is not a positive count", f)
		}
		fmt.Fprintf(progress, "loadtest: ingestion of %d Dynamo RouterEvent JSON events with --kv-apply-shards %d, %d rounds\n",
			o.ingestEvents, n, shardRounds)
		res, err := speed.Ingest(ctx, speed.IngestConfig{Binary: bins.Hintstream, NATSURL: srv.URL(),
			Events: o.ingestEvents, Rounds: shardRounds, NatsCLI: cli, ExtraArgs: []string{"--kv-apply-shards", f},
			Progress: progress, ProgressEvery: 5 * time.Second})
		if err != nil {
			return err
		}
		r.shards = append(r.shards, shardRun{shards: n, ingest: res})
	}
	r.haveSpeed = true
	return nil
}

// latencyPair measures first and second in one round: side by side in
// turns (speed.Pair), or with slice 0 one after the other.
func latencyPair(ctx context.Context, cfg speed.LatencyConfig, first, second speed.Program, slice time.Duration) ([2]speed.LatencyResult, error) {
	if slice > 0 {
		cfg.Target, cfg.Binary = first.Target, first.Binary
		return speed.Pair(ctx, cfg, second)
	}
	var out [2]speed.LatencyResult
	for k, p := range []speed.Program{first, second} {
		c := cfg
		c.Target, c.Binary = p.Target, p.Binary
		res, err := speed.Latency(ctx, c)
		if err != nil {
			return out, err
		}
		out[k] = res
	}
	return out, nil
}

func turnsNote(slice, gap time.Duration) string {
	if slice <= 0 {
		return ", one after the other"
	}
	if gap > 0 {
		return fmt.Sprintf(", side by side in turns of %v (%v gap)", slice, gap)
	}
	return fmt.Sprintf(", side by side in turns of %v", slice)
}

// shardRounds are the ingestion rounds of each --apply-shards simulate.
const shardRounds = 3

// shardRun is the Dynamo JSON ingestion with one --kv-apply-shards.
type shardRun struct {
	shards int
	ingest speed.IngestResult
}

// formats are the request formats of the latency rounds; msgpack first
// (its rounds make the CDF).
var formats = []struct {
	request string
	json    bool
}{{"msgpack", false}, {"JSON", true}}

// eventFormats are the KV-event formats of the ingestion rounds; the
// Dynamo JSON first.
var eventFormats = []struct {
	name   string
	engine bool
}{{"Dynamo RouterEvent JSON events", false}, {"vLLM msgpack EventBatches", true}}

// variants are the value runs of each workload: affinity off and on,
// each without and with transfer time. The last is the headline.
var variants = []struct{ affinity, transfer bool }{{false, false}, {false, true}, {true, false}, {true, true}}

func runValue(ctx context.Context, o options, progress io.Writer, r *results) error {
	if o.kvBytesPerToken <= 0 || o.l3Bandwidth <= 0 {
		return fmt.Errorf("--kv-bytes-per-token and --l3-bandwidth must be positive")
	}
	w, err := workload.LoadTrace(o.trace, workload.TraceOptions{})
	if err != nil {
		return err
	}
	sw, err := workload.Generate(workload.SyntheticConfig{Seed: 1})
	if err != nil {
		return err
	}
	for k, wl := range []struct {
		name string
		w    *workload.Workload
		out  *[]simulate.Result
	}{{"trace " + filepath.Base(o.trace), w, &r.trace}, {"synthetic sessions", sw, &r.synthetic}} {
		start := time.Now()
		for _, v := range variants {
			fmt.Fprintf(progress, "loadtest: hint value on the %s (%d requests), affinity %v, transfer time %v\n",
				wl.name, len(wl.w.Requests), v.affinity, v.transfer)
			res, err := value.Run(ctx, value.Config{Workload: wl.w, Affinity: v.affinity, TransferTime: v.transfer,
				KVBytesPerToken: o.kvBytesPerToken, L3Bandwidth: o.l3Bandwidth * 1e9})
			if err != nil {
				return fmt.Errorf("value on the %s: %w", wl.name, err)
			}
			fmt.Fprintf(progress, "loadtest: %s: hintstream gets %.1f%% of the clairvoyant bound's saving, prefetches %.1f%% accurate (%v)\n",
				wl.name, 100*res.OfBound, 100*res.Hintstream.PrefetchAccuracy, res.Hintstream.Elapsed.Round(time.Second))
			*wl.out = append(*wl.out, res)
		}
		r.valueWall[k] = time.Since(start)
	}
	r.haveVal = true
	return nil
}

// loadAvg is /proc/loadavg's first three fields: other programs' load
// is the first suspect when latency figures swing between runs.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

var errNothing = errors.New("nothing measured: both --skip-speed and --skip-value")

// defaultTrace gunzips the repository's copy of the Mooncake synthetic
// trace (testdata/data) into a temporary file: the trace reader reads a
// plain file back by offset.
func defaultTrace(root string) (string, error) {
	in, err := os.Open(filepath.Join(root, "testdata", "data", "mooncake_synthetic_trace.jsonl.gz"))
	if err != nil {
		return "", err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return "", err
	}
	out, err := os.CreateTemp("", "mooncake-trace-*.jsonl")
	if err != nil {
		return "", err
	}
	if _, err = io.Copy(out, zr); err == nil {
		err = out.Close()
	}
	if err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), nil
}
