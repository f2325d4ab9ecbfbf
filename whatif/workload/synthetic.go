package workload

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// SyntheticConfig describes agentic sessions. Zero fields take the
// defaults shown; Generate is deterministic for a given config.
type SyntheticConfig struct {
	Seed uint64
	// Sessions to generate (default 50), starting SessionInterval apart
	// on average (exponential gaps; default 2s).
	Sessions        int
	SessionInterval time.Duration
	// Turns per session, uniform in [MinTurns, MaxTurns] (default 2..8).
	MinTurns, MaxTurns int
	// ToolCallProb is the chance a response is a tool call (default 0.7;
	// negative: never). The tool's time is log-normal with median ToolTime
	// (default 5s) and ToolTimeSigma (default 1). Other responses are
	// followed by the user's think time, exponential with mean ThinkTime
	// (default 20s).
	ToolCallProb  float64
	ToolTime      time.Duration
	ToolTimeSigma float64
	ThinkTime     time.Duration
	// WakeupLead is how long before each turn after the first its wake-up
	// comes (default 500ms; negative: 0), unless Facts.
	WakeupLead time.Duration
	// Facts: every turn says how it ends (FinishKnown, a tool call or
	// not, the tool named ToolName), as a trace with finish_reason does,
	// and next turns are announced as Signals say instead of by the
	// WakeupLead rule.
	Facts   bool
	Signals Signals
	// SystemPromptTokens open every session's prompt (shared by all
	// sessions; default 2048); FirstPromptTokens follow in the first turn
	// (default 4096). Each later turn's prompt is the previous prompt, its
	// output and PromptGrowth more tokens (default 1024). Outputs are
	// OutputTokens long (default 256).
	SystemPromptTokens, FirstPromptTokens, PromptGrowth, OutputTokens int
	BlockSize                                                         int // default 512
	Model                                                             string
	Service                                                           ServiceModel
}

func (c SyntheticConfig) withDefaults() SyntheticConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Sessions, 50)
	def(&c.MinTurns, 2)
	def(&c.MaxTurns, 8)
	def(&c.SystemPromptTokens, 2048)
	def(&c.FirstPromptTokens, 4096)
	def(&c.PromptGrowth, 1024)
	def(&c.OutputTokens, 256)
	def(&c.BlockSize, DefaultBlockSize)
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&c.SessionInterval, 2*time.Second)
	dur(&c.ToolTime, 5*time.Second)
	dur(&c.ThinkTime, 20*time.Second)
	if c.WakeupLead == 0 {
		c.WakeupLead = 500 * time.Millisecond
	}
	c.WakeupLead = max(c.WakeupLead, 0)
	if c.ToolCallProb == 0 {
		c.ToolCallProb = 0.7
	}
	if c.ToolTimeSigma <= 0 {
		c.ToolTimeSigma = 1
	}
	return c
}

// sessionTurn is a generated request and the index of its session.
type sessionTurn struct {
	req     Request
	session int
}

// linkSessions puts turns in time order (stably) and links each to its
// session's previous turn.
func linkSessions(turns []sessionTurn) []Request {
	slices.SortStableFunc(turns, func(a, b sessionTurn) int { return cmp.Compare(a.req.At, b.req.At) })
	out := make([]Request, len(turns))
	last := map[int]int{} // session → index of its latest turn so far
	for i, t := range turns {
		if p, ok := last[t.session]; ok {
			t.req.Prev = p
		}
		last[t.session] = i
		out[i] = t.req
	}
	return out
}

// Generate builds the synthetic workload. A MaxTurns below MinTurns or a
// ToolCallProb above 1 fails with ErrInvalid.
func Generate(cfg SyntheticConfig) (*Workload, error) {
	c := cfg.withDefaults()
	if c.MaxTurns < c.MinTurns || c.ToolCallProb > 1 || math.IsNaN(c.ToolCallProb) {
		return nil, fmt.Errorf("%w: turns %d..%d, tool-call probability %v", ErrInvalid, c.MinTurns, c.MaxTurns, c.ToolCallProb)
	}
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x5eed5eed5eed5eed))
	bs := c.BlockSize
	sysFull := c.SystemPromptTokens / bs
	nextID := uint64(sysFull) // ids below are the shared system prompt's
	var turns []sessionTurn
	var start time.Duration
	for s := range c.Sessions {
		start += time.Duration(rng.ExpFloat64() * float64(c.SessionInterval))
		stream := make([]uint64, sysFull) // the session's block ids, shared prefix first
		for i := range stream {
			stream[i] = uint64(i)
		}
		n := c.MinTurns + rng.IntN(c.MaxTurns-c.MinTurns+1)
		at, length := start, c.SystemPromptTokens+c.FirstPromptTokens
		for k := range n {
			for len(stream)*bs < length {
				stream = append(stream, nextID)
				nextID++
			}
			r := Request{At: at, InputLength: length, OutputLength: c.OutputTokens,
				HashIDs: slices.Clone(stream[:(length+bs-1)/bs]), Prev: -1, Turn: k, FinishKnown: c.Facts}
			r.ToolCall = c.ToolCallProb > 0 && rng.Float64() < c.ToolCallProb
			turns = append(turns, sessionTurn{r, s})
			done := at + c.Service.Time(length, c.OutputTokens)
			if r.ToolCall {
				at = done + time.Duration(math.Exp(math.Log(float64(c.ToolTime))+c.ToolTimeSigma*rng.NormFloat64()))
			} else {
				at = done + time.Duration(rng.ExpFloat64()*float64(c.ThinkTime))
			}
			length += c.OutputTokens + c.PromptGrowth
		}
	}
	w := &Workload{Model: c.Model, BlockSize: bs, Requests: linkSessions(turns)}
	if err := w.finish(c.Service, c.WakeupLead, c.Signals, false); err != nil {
		return nil, err
	}
	return w, nil
}
