package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The published statistics of agentic-coding sessions the agent profile
// is built to (per request unless said): input tokens P10/P50/P90 ≈
// 43K/110K/300K, output 100/220/940; about 85% of turns end in a tool
// call; the gap after a tool call has median ≈ 8 s, P90 ≈ 70 s, P99 ≈
// 600 s, after a human's turn a median ≈ 210 s with a long tail;
// 19/48/101 requests per conversation at P25/P50/P75; a tools-and-system
// prefix of about 15K tokens shared by every conversation.
var (
	// AgentOutputQuantiles: output tokens at P10, P50, P90.
	AgentOutputQuantiles = [3]float64{100, 220, 940}
	// AgentInputQuantiles: input tokens at P10, P50, P90 (what the
	// growth parameters are set to reach; the test checks them).
	AgentInputQuantiles = [3]float64{43_000, 110_000, 300_000}
	// AgentToolGapQuantiles: seconds from a tool call's response to the
	// next request, at P50, P90, P99.
	AgentToolGapQuantiles = [3]float64{8, 70, 600}
	// AgentTurnsQuantiles: requests per conversation at P25, P50, P75.
	AgentTurnsQuantiles = [3]float64{19, 48, 101}
)

// Agent profile constants not given by the statistics, and why.
const (
	// AgentToolCallShare of turns end in a tool call.
	AgentToolCallShare = 0.85
	// AgentHumanGapMedian is the median gap after a human's turn; its
	// spread (AgentHumanGapSigma, log-normal) is our assumption of the
	// "long tail": P90 ≈ 24 min.
	AgentHumanGapMedian = 210 * time.Second
	AgentHumanGapSigma  = 1.5
	// AgentPrefixTokens open every conversation's every prompt.
	AgentPrefixTokens = 15_000
	// AgentMaxContext: a conversation whose next prompt would pass it is
	// compacted (a new prompt of the prefix and a summary), as coding
	// agents do near their model's window; the trace the statistics
	// describe has prompts up to 894K tokens.
	AgentMaxContext = 900_000
)

// agentTools name the tool calls (one gap distribution for all: the
// statistics give none per tool).
var agentTools = []string{"bash", "read_file", "edit_file", "grep", "list_dir"}

// AgentConfig describes the long-context coding-agent profile. Zero
// fields take the defaults shown; GenerateAgent is deterministic for a
// given config.
type AgentConfig struct {
	Seed uint64
	// Conversations to generate (default 64), starting Interval apart on
	// average (exponential gaps; default 10 s). The statistics give no
	// arrival rate: these put the default cluster (4 workers × 1,024
	// blocks) under the load of a busy deployment, 1.7M tokens of
	// contexts used within 5 minutes at the median (seed 1), at the scale
	// of the trace the statistics describe (6,383 requests in 131
	// conversations).
	Conversations int
	Interval      time.Duration
	// Signals announce next turns (every turn's finish is known).
	Signals   Signals
	BlockSize int // default 512
	Model     string
	Service   ServiceModel
}

func (c AgentConfig) withDefaults() AgentConfig {
	if c.Conversations <= 0 {
		c.Conversations = 64
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.BlockSize <= 0 {
		c.BlockSize = DefaultBlockSize
	}
	return c
}

// logQuantiles is a distribution given by quantiles: ln(value) is
// piecewise linear in the standard normal z of the quantile's level,
// through the knots, and extended past the first and last with their
// neighbouring slopes. Through two knots it is a log-normal; through
// three, one log-normal below the middle knot and another above (or two
// above), so every given quantile is met exactly.
type logQuantiles struct {
	z, lnv []float64
}

// newLogQuantiles makes the distribution with value v[k] at level p[k]
// (p ascending in (0, 1), v ascending and positive).
func newLogQuantiles(p, v []float64) logQuantiles {
	var d logQuantiles
	for k := range p {
		d.z = append(d.z, normalQuantile(p[k]))
		d.lnv = append(d.lnv, math.Log(v[k]))
	}
	return d
}

// at is the value at standard normal z.
func (d logQuantiles) at(z float64) float64 {
	k := 1
	for k < len(d.z)-1 && z > d.z[k] {
		k++
	}
	slope := (d.lnv[k] - d.lnv[k-1]) / (d.z[k] - d.z[k-1])
	return math.Exp(d.lnv[k-1] + slope*(z-d.z[k-1]))
}

func (d logQuantiles) draw(rng *rand.Rand) float64 { return d.at(rng.NormFloat64()) }

// normalQuantile is the standard normal quantile at p (Acklam's
// rational approximation, relative error below 1.2e-9).
func normalQuantile(p float64) float64 {
	a := [...]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [...]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [...]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	e := [...]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	const lo = 0.02425
	switch {
	case p < lo:
		q := math.Sqrt(-2 * math.Log(p))
		return (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((e[0]*q+e[1])*q+e[2])*q+e[3])*q + 1)
	case p > 1-lo:
		q := math.Sqrt(-2 * math.Log(1-p))
		return -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((e[0]*q+e[1])*q+e[2])*q+e[3])*q + 1)
	}
	q := p - 0.5
	r := q * q
	return (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
}

// Growth of a conversation's prompt, set so that the requests' input
// tokens reach AgentInputQuantiles (TestAgentProfileMatchesTheStatistics):
// the first prompt is the prefix and a task of agentTask tokens; each
// later one appends the previous output and a tool result (agentResult)
// or a user message (agentMessage), times the conversation's own
// agentPace (some conversations read whole files, others grep).
var (
	agentTask         = newLogQuantiles([]float64{0.5, 0.9}, []float64{15_000, 36_000})
	agentResult       = newLogQuantiles([]float64{0.5, 0.9}, []float64{1_050, 4_000})
	agentMessage      = newLogQuantiles([]float64{0.5, 0.9}, []float64{300, 1_500})
	agentPaceByLength = 0.7
	agentPace         = newLogQuantiles([]float64{0.5, 0.9}, []float64{1, 1.6})
)

// GenerateAgent builds the long-context coding-agent workload: every
// turn's finish is known (FinishKnown, with a tool name on a tool call),
// so its next turn is announced as c.Signals say, not by the assumed
// rule.
func GenerateAgent(cfg AgentConfig) (*Workload, error) {
	c := cfg.withDefaults()
	if err := c.Signals.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0xa9e47a9e47a9e47))
	turnsDist := newLogQuantiles([]float64{0.25, 0.5, 0.75}, AgentTurnsQuantiles[:])
	outDist := newLogQuantiles([]float64{0.1, 0.5, 0.9}, AgentOutputQuantiles[:])
	toolGap := newLogQuantiles([]float64{0.5, 0.9, 0.99}, AgentToolGapQuantiles[:])
	bs := c.BlockSize
	prefixFull := AgentPrefixTokens / bs
	nextID := uint64(prefixFull) // ids below are the shared prefix's
	var turns []sessionTurn
	var start time.Duration
	for s := range c.Conversations {
		start += time.Duration(rng.ExpFloat64() * float64(c.Interval))
		n := min(max(int(math.Round(turnsDist.draw(rng))), 1), 2000)
		// Long conversations take smaller steps (else their last turns
		// alone would make the input's upper quantiles).
		pace := agentPace.draw(rng) * math.Pow(AgentTurnsQuantiles[1]/float64(n), agentPaceByLength)
		var stream []uint64
		fresh := func() int { // a new context: the prefix, then a task
			stream = stream[:0]
			for i := range prefixFull {
				stream = append(stream, uint64(i))
			}
			return AgentPrefixTokens + int(agentTask.draw(rng))
		}
		at, length := start, fresh()
		for k := range n {
			for len(stream)*bs < length {
				stream = append(stream, nextID)
				nextID++
			}
			out := min(max(int(math.Round(outDist.draw(rng))), 1), MaxTraceTokens)
			r := Request{At: at, InputLength: length, OutputLength: out,
				HashIDs: slices.Clone(stream[:(length+bs-1)/bs]), Prev: -1, Turn: k, FinishKnown: true}
			r.ToolCall = rng.Float64() < AgentToolCallShare
			var appended float64
			if r.ToolCall {
				r.Tool = agentTools[rng.IntN(len(agentTools))]
				appended = agentResult.draw(rng)
			} else {
				appended = agentMessage.draw(rng)
			}
			turns = append(turns, sessionTurn{r, s})
			done := at + c.Service.Time(length, out)
			if r.ToolCall {
				at = done + time.Duration(toolGap.draw(rng)*float64(time.Second))
			} else {
				at = done + time.Duration(math.Exp(math.Log(float64(AgentHumanGapMedian))+AgentHumanGapSigma*rng.NormFloat64()))
			}
			length += out + int(appended*pace)
			if length > AgentMaxContext {
				// Compacted: the next prompt starts again from the
				// prefix, its block ids new past it.
				length = fresh()
			}
		}
	}
	w := &Workload{Model: c.Model, BlockSize: bs, Requests: linkSessions(turns)}
	if err := w.finish(c.Service, 0, c.Signals, false); err != nil {
		return nil, fmt.Errorf("workload: agent profile: %w", err)
	}
	return w, nil
}
