package speed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
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
	// Slice and Gap are the turns of a Pair: each program's stretch of
	// wake-ups (default DefaultSlice) and the pause after it (default
	// none). A single program's run has no turns.
	Slice, Gap time.Duration
	// Progress gets one line every ProgressEvery (default 2 s); nil: none.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Program is one measured program of a run: LatencyConfig's own, or the
// second of a Pair.
type Program struct {
	Target     Target // TargetHintstream (default) or TargetFloor
	Binary     string // required
	CPUProfile string // hintstream only: as LatencyConfig.CPUProfile
	ExtraArgs  []string
	ChildLog   io.Writer
}

func (p *Program) check() error {
	if p.Binary == "" {
		return fmt.Errorf("%w: Binary is required", ErrConfig)
	}
	if p.Target == "" {
		p.Target = TargetHintstream
	}
	if p.Target != TargetHintstream && p.Target != TargetFloor {
		return fmt.Errorf("%w: unknown target %q", ErrConfig, p.Target)
	}
	return nil
}

func (c *LatencyConfig) program() Program {
	return Program{Target: c.Target, Binary: c.Binary, CPUProfile: c.CPUProfile, ExtraArgs: c.ExtraArgs, ChildLog: c.ChildLog}
}

// DefaultSlice is the turn of a Pair: 10 wake-ups at 2,000/s. A round's
// p99 on a shared 2-core machine is decided by a few stalls of tens of
// milliseconds; turns shorter than a stall put both programs in every
// one. (Turns of 250 ms did not: the floor against itself still failed
// the p99 rule in 3 of 5 rounds, as one after the other had; in 5 ms
// turns its ratios were 0.86–1.12. BenchmarkTurnsNoise.)
const DefaultSlice = 5 * time.Millisecond

func (c *LatencyConfig) defaults() error {
	p := c.program()
	if err := p.check(); err != nil {
		return err
	}
	c.Target = p.Target
	if c.Slice < 0 || c.Gap < 0 {
		return fmt.Errorf("%w: negative Slice or Gap", ErrConfig)
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
		{&c.ProgressEvery, 2 * time.Second}, {&c.Slice, DefaultSlice}} {
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
	var res []LatencyResult
	err := withServer(cfg.NATSURL, func(url string) error {
		var err error
		res, err = runPrograms(ctx, cfg, url, []Program{cfg.program()})
		return err
	})
	if err != nil {
		return LatencyResult{}, err
	}
	return res[0], nil
}

// Pair measures cfg's program and other in one run, taking turns: the
// schedule gives cfg's program Slice of wake-ups at Rate, then nothing
// for Gap, then other Slice, then Gap, and so on, until each has had
// Warmup+Duration of wake-ups. Both programs run throughout, each on its
// own request subject, and the machine carries Rate wake-ups/s in all.
//
// Why: on a shared 2-core machine a round's p99 is decided by a few
// stalls of the whole machine (the publisher runs late in them too), so
// two programs run one after the other, even in alternated rounds, meet
// different stalls, and the pair's p99 ratio follows the stalls more
// than the programs (the floor against itself: 0.17–4 in one run).
// Turns shorter than a stall (DefaultSlice) put both in every stall.
//
// CPUPerWakeup is each program's CPU from its first measured wake-up to
// the end of the drain (both run throughout, so idle time between turns
// counts, as it would in service); SendRate is the rate within its
// turns. At most one of the two may be hintstream (the worker registry
// is one per bus); the floor may be both.
func Pair(ctx context.Context, cfg LatencyConfig, other Program) ([2]LatencyResult, error) {
	if err := cfg.defaults(); err != nil {
		return [2]LatencyResult{}, err
	}
	if err := other.check(); err != nil {
		return [2]LatencyResult{}, err
	}
	if cfg.Target == TargetHintstream && other.Target == TargetHintstream {
		return [2]LatencyResult{}, fmt.Errorf("%w: a pair holds at most one hintstream", ErrConfig)
	}
	var out [2]LatencyResult
	err := withServer(cfg.NATSURL, func(url string) error {
		res, err := runPrograms(ctx, cfg, url, []Program{cfg.program(), other})
		if err == nil {
			out[0], out[1] = res[0], res[1]
		}
		return err
	})
	return out, err
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
