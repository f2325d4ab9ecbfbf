package speed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Target names the program a latency run measures.
type Target string

// The two targets of a latency run.
const (
	TargetHintstream Target = "hintstream"
	TargetFloor      Target = "floor"
)

// ErrConfig is matched (errors.Is) by every error for an unusable config.
var ErrConfig = errors.New("speed: invalid config")

// LatencyConfig configures Latency. Binary is required; zero values
// elsewhere take the defaults stated.
type LatencyConfig struct {
	Target Target // TargetHintstream (default) or TargetFloor
	Binary string // path of the target's program (see Build)
	// NATSURL is the bus; "" starts an embedded server (JetStream file
	// store in a temporary directory) for this run only. Runs that are to
	// be compared should share one (StartServer). A shared bus is a test
	// bus: Latency replaces the worker registry's content.
	NATSURL      string
	Rate         float64       // wake-ups per second; default 2,000
	PromptTokens int           // tokens per wake-up prompt; default 2,048
	Duration     time.Duration // measured time; default 20 s
	Warmup       time.Duration // sent before, not measured; default 2 s
	// Workers registered (hintstream only; each a real PULL socket, and
	// holding the first half of some sessions' prompts in its KV events):
	// default 8. The floor sends every hint to one socket.
	Workers  int
	Sessions int  // distinct prompts, cycled; default 64
	JSON     bool // publish JSON request events instead of msgpack
	// Drain is how long to wait for hints after the last wake-up; default
	// 3 s (a prefetch expires 2 s after its wake-up).
	Drain time.Duration
	// CPUProfile, when set (hintstream only), saves a CPU profile of the
	// measured window there (the child runs with --pprof; profiling costs
	// a little latency, so compare figures from runs without it).
	CPUProfile string
	ExtraArgs  []string  // appended to the child's command line
	ChildLog   io.Writer // the child's output; default: kept only for errors
	// Progress gets one line every ProgressEvery (default 2 s); nil: none.
	Progress      io.Writer
	ProgressEvery time.Duration
}

func (c *LatencyConfig) defaults() error {
	if c.Binary == "" {
		return fmt.Errorf("%w: Binary is required", ErrConfig)
	}
	if c.Target == "" {
		c.Target = TargetHintstream
	}
	if c.Target != TargetHintstream && c.Target != TargetFloor {
		return fmt.Errorf("%w: unknown target %q", ErrConfig, c.Target)
	}
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&c.PromptTokens, 2048)
	set(&c.Workers, 8)
	set(&c.Sessions, 64)
	if c.Rate <= 0 {
		c.Rate = 2000
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.Duration, 20 * time.Second}, {&c.Warmup, 2 * time.Second}, {&c.Drain, 3 * time.Second},
		{&c.ProgressEvery, 2 * time.Second}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return nil
}

// LatencyResult is one latency run. Counts and quantiles cover the
// measured window only (warm-up excluded).
type LatencyResult struct {
	Target             Target
	Rate               float64 // configured wake-ups/s
	Sent, Received     int     // measured wake-ups and their hints
	Lost               int     // Sent − Received: no hint within Drain
	Duplicates         int     // hints received twice (all windows)
	SendRate, RecvRate float64 // achieved, per second
	P50, P99, P999     time.Duration
	Mean, Max          time.Duration
	Latency            *hdr.Histogram // scheduled send → hint receipt
	// SendLag is how late the publisher itself sent (actual − scheduled):
	// part of every latency, and the first suspect if both targets miss.
	SendLag       *hdr.Histogram
	PublishErrors int64
	Elapsed       time.Duration // whole run, start-up included
	// CPUPerWakeup is the target's CPU time (user+system) from the first
	// measured send to the end, per measured wake-up: the efficiency
	// figure that CPU contention from other programs does not inflate.
	CPUPerWakeup time.Duration
	// Counters are the target's hint and request counters from /metrics
	// at the end (hintstream only).
	Counters   map[string]float64
	CPUProfile string // where the profile was saved, if asked
}

// Latency runs one open-loop latency measurement: start the target,
// publish Rate wake-ups per second for Warmup+Duration on a fixed
// schedule, and time each hint from its scheduled send to its receipt.
// It returns an error only when the run could not be made; lost hints
// are a result.
func Latency(ctx context.Context, cfg LatencyConfig) (LatencyResult, error) {
	if err := cfg.defaults(); err != nil {
		return LatencyResult{}, err
	}
	var res LatencyResult
	err := withServer(cfg.NATSURL, func(url string) error {
		var err error
		res, err = latency(ctx, cfg, url)
		return err
	})
	return res, err
}

const loadModel = "loadtest"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func latency(ctx context.Context, cfg LatencyConfig, url string) (LatencyResult, error) {
	began := time.Now()
	nc, err := nats.Connect(url, nats.Name("hintstream-speed"))
	if err != nil {
		return LatencyResult{}, err
	}
	defer nc.Close()
	var pubErrs atomic.Int64
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) {
		pubErrs.Add(1)
	}))
	if err != nil {
		return LatencyResult{}, err
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet(), streams.WithLogger(quiet)); err != nil {
		return LatencyResult{}, err
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	warm := int(cfg.Rate * cfg.Warmup.Seconds())
	total := warm + int(cfg.Rate*cfg.Duration.Seconds())
	period := time.Duration(float64(time.Second) / cfg.Rate)
	rec := newRecorder(runID, total, warm)

	sockets := 1
	if cfg.Target == TargetHintstream {
		sockets = cfg.Workers
	}
	recv, err := startReceivers(sockets, rec)
	if err != nil {
		return LatencyResult{}, err
	}
	defer recv.stop()
	prompts := makePrompts(cfg.Sessions, cfg.PromptTokens)

	var args []string
	var marker, httpAddr string
	switch cfg.Target {
	case TargetHintstream:
		if err := registerWorkers(ctx, js, recv.endpoints, prompts); err != nil {
			return LatencyResult{}, err
		}
		if httpAddr, err = freeAddr(); err != nil {
			return LatencyResult{}, err
		}
		args = []string{"run", "--nats-url", url, "--group", "speed-" + runID, "--http-addr", httpAddr,
			"--snapshot-interval", "0"}
		if cfg.CPUProfile != "" {
			args = append(args, "--pprof")
		}
		marker = "hintstream running"
		defer deleteConsumer(js, "LLM_REQUESTS", "speed-"+runID+"-requests")
	case TargetFloor:
		args = []string{"--nats-url", url, "--endpoint", recv.endpoints[0], "--durable", "floor-" + runID}
		marker = "floor: consuming"
		defer deleteConsumer(js, "LLM_REQUESTS", "floor-"+runID)
	}
	subject := streams.RequestSubject(loadModel)
	headers := map[string]string{"x-dynamo-experimental-wakeup": "1"}
	type template struct {
		event schemas.RequestEvent
		requestTemplate
	}
	templates := make([]template, len(prompts))
	for s, p := range prompts {
		templates[s].event = schemas.RequestEvent{SessionID: "s" + strconv.Itoa(s), Model: loadModel, TokenIDs: p, Headers: headers}
		if templates[s].requestTemplate, err = newRequestTemplate(templates[s].event); err != nil {
			return LatencyResult{}, err
		}
	}
	proc, err := startChild(cfg.Binary, append(args, cfg.ExtraArgs...), marker, cfg.ChildLog, time.Minute)
	if err != nil {
		return LatencyResult{}, err
	}
	defer proc.stop()

	// The schedule: wake-up i is due at start + i·period, whatever
	// happened to the ones before it.
	start := time.Now().Add(20 * time.Millisecond)
	sched := func(i int) time.Time { return start.Add(time.Duration(i) * period) }
	rec.mu.Lock()
	rec.sched = sched
	rec.mu.Unlock()
	stopProgress := progress(cfg.Progress, cfg.ProgressEvery, func(el time.Duration) string {
		sent, got, p99 := rec.snapshot()
		return fmt.Sprintf("latency %s: %4.1fs/%.0fs sent %d received %d p99 %v", cfg.Target,
			el.Seconds(), (cfg.Warmup + cfg.Duration).Seconds(), sent, got, p99.Round(time.Microsecond))
	})
	defer stopProgress()
	var profErr chan error
	if cfg.CPUProfile != "" && cfg.Target == TargetHintstream {
		profErr = make(chan error, 1)
		go func() {
			select {
			case <-time.After(time.Until(start.Add(cfg.Warmup))):
			case <-ctx.Done():
				profErr <- ctx.Err()
				return
			}
			profErr <- cpuProfile(ctx, httpAddr, max(1, int(cfg.Duration.Seconds())), cfg.CPUProfile)
		}()
	}

	var firstSent, lastSent time.Time
	var cpu0 time.Duration
	for i := 0; i < total; i++ {
		due := sched(i)
		if err := ctx.Err(); err != nil {
			return LatencyResult{}, err
		}
		sleepUntil(due)
		now := time.Now()
		if i >= warm {
			rec.sendLag.Record(now.Sub(due))
			if i == warm {
				firstSent, cpu0 = now, cpuTime(proc.cmd.Process.Pid)
			}
		}
		id := runID + "-" + strconv.Itoa(i)
		var body []byte
		if cfg.JSON {
			ev := templates[i%len(templates)].event
			ev.RequestID, ev.ReceivedAtMs = id, due.UnixMilli()
			if body, err = json.Marshal(&ev); err != nil {
				return LatencyResult{}, err
			}
		} else {
			body = templates[i%len(templates)].encode(id, due.UnixMilli())
		}
		if _, err := js.PublishAsync(subject, body); err != nil {
			pubErrs.Add(1)
		}
		rec.sent.Add(1)
	}
	lastSent = time.Now()
	select {
	case <-rec.all:
	case <-time.After(cfg.Drain):
	case <-ctx.Done():
		return LatencyResult{}, ctx.Err()
	}
	cpu1 := cpuTime(proc.cmd.Process.Pid)
	res := rec.result()
	res.Target, res.Rate, res.PublishErrors = cfg.Target, cfg.Rate, pubErrs.Load()
	if res.Sent > 0 && cpu1 > cpu0 {
		res.CPUPerWakeup = (cpu1 - cpu0) / time.Duration(res.Sent)
	}
	if el := lastSent.Sub(firstSent).Seconds(); el > 0 {
		res.SendRate = float64(res.Sent-1) / el
	}
	if profErr != nil {
		if err := <-profErr; err != nil {
			return res, fmt.Errorf("speed: CPU profile: %w", err)
		}
		res.CPUProfile = cfg.CPUProfile
	}
	if httpAddr != "" {
		c := &http.Client{Timeout: 5 * time.Second}
		res.Counters, _ = scrape(ctx, c, httpAddr, "hintstream_hints_", "hintstream_requests_", "hintstream_sender_")
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// Merge combines two runs of one target (e.g. rounds alternated with
// another target, so that both see the same spells of CPU contention):
// counts add, histograms merge and quantiles are recomputed from them,
// rates and CPU per wake-up are averaged weighted by Sent.
func (r LatencyResult) Merge(o LatencyResult) LatencyResult {
	if r.Latency == nil {
		return o
	}
	if o.Latency == nil {
		return r
	}
	m := r
	m.Latency, m.SendLag = hdr.New(), hdr.New()
	for _, h := range []*hdr.Histogram{r.Latency, o.Latency} {
		m.Latency.Merge(h)
	}
	for _, h := range []*hdr.Histogram{r.SendLag, o.SendLag} {
		m.SendLag.Merge(h)
	}
	m.Sent, m.Received, m.Lost, m.Duplicates = r.Sent+o.Sent, r.Received+o.Received, r.Lost+o.Lost, r.Duplicates+o.Duplicates
	m.PublishErrors, m.Elapsed = r.PublishErrors+o.PublishErrors, r.Elapsed+o.Elapsed
	if m.Sent > 0 {
		w := func(a, b float64) float64 { return (a*float64(r.Sent) + b*float64(o.Sent)) / float64(m.Sent) }
		m.SendRate, m.RecvRate = w(r.SendRate, o.SendRate), w(r.RecvRate, o.RecvRate)
		m.CPUPerWakeup = time.Duration(w(float64(r.CPUPerWakeup), float64(o.CPUPerWakeup)))
	}
	m.P50, m.P99, m.P999 = m.Latency.ValueAtQuantile(0.5), m.Latency.ValueAtQuantile(0.99), m.Latency.ValueAtQuantile(0.999)
	m.Mean, m.Max = m.Latency.Mean(), m.Latency.Max()
	if len(r.Counters)+len(o.Counters) > 0 {
		m.Counters = map[string]float64{}
		for _, c := range []map[string]float64{r.Counters, o.Counters} {
			for k, v := range c {
				m.Counters[k] += v
			}
		}
	}
	if m.CPUProfile == "" {
		m.CPUProfile = o.CPUProfile
	}
	return m
}
