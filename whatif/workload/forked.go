package workload

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// ForkedConfig describes sessions whose turns come milliseconds apart
// and branch: a turn may have two next turns (a fork, as an agent that
// runs two sub-tasks on one conversation), so a session's turns overlap
// and its wake-ups interleave with its requests. Times are whole
// milliseconds, as in a public trace, so a fork's two branches may share
// a timestamp. Zero fields take the defaults shown; GenerateForked is
// deterministic for a given config.
type ForkedConfig struct {
	Seed uint64
	// Sessions (default 40), starting SessionInterval apart on average
	// (exponential; default 500ms).
	Sessions        int
	SessionInterval time.Duration
	// Turns per session (default 8), counting every branch's turns.
	Turns int
	// Gap is the mean time from a response to its next turn (exponential,
	// rounded to whole ms; default 3ms).
	Gap time.Duration
	// ForkProb is the chance a turn has two next turns (default 0.4;
	// negative: never); the second starts ForkSkew after the first at
	// most (uniform whole ms; default 2ms, negative: 0).
	ForkProb float64
	ForkSkew time.Duration
	// WakeupLead (default 500ms; negative: 0): see SyntheticConfig.
	WakeupLead time.Duration
	// Prompt sizes as in SyntheticConfig (defaults 1024, 2048, 512, 128).
	SystemPromptTokens, FirstPromptTokens, PromptGrowth, OutputTokens int
	BlockSize                                                         int // default 512
	Model                                                             string
	Service                                                           ServiceModel
}

func (c ForkedConfig) withDefaults() ForkedConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Sessions, 40)
	def(&c.Turns, 8)
	def(&c.SystemPromptTokens, 1024)
	def(&c.FirstPromptTokens, 2048)
	def(&c.PromptGrowth, 512)
	def(&c.OutputTokens, 128)
	def(&c.BlockSize, DefaultBlockSize)
	if c.SessionInterval <= 0 {
		c.SessionInterval = 500 * time.Millisecond
	}
	if c.Gap <= 0 {
		c.Gap = 3 * time.Millisecond
	}
	if c.ForkProb == 0 {
		c.ForkProb = 0.4
	}
	if c.ForkSkew == 0 {
		c.ForkSkew = 2 * time.Millisecond
	}
	c.ForkSkew = max(c.ForkSkew, 0)
	if c.WakeupLead == 0 {
		c.WakeupLead = 500 * time.Millisecond
	}
	c.WakeupLead = max(c.WakeupLead, 0)
	return c
}

// GenerateForked builds the forked workload. A ForkProb above 1 fails
// with ErrInvalid.
func GenerateForked(cfg ForkedConfig) (*Workload, error) {
	c := cfg.withDefaults()
	if c.ForkProb > 1 || math.IsNaN(c.ForkProb) {
		return nil, fmt.Errorf("%w: fork probability %v", ErrInvalid, c.ForkProb)
	}
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0xf0f0f0f0f0f0f0f0))
	bs := c.BlockSize
	sysFull := c.SystemPromptTokens / bs
	nextID := uint64(sysFull)
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	// tip is a turn still to be made: its time, its prompt's block ids and
	// length, and the (generation-order) index of its previous turn.
	type tip struct {
		at     time.Duration
		stream []uint64
		length int
		prev   int
	}
	type turn struct {
		req  Request
		prev int // generation-order index, -1 for a first turn
	}
	var turns []turn
	var start time.Duration
	for range c.Sessions {
		start += time.Duration(rng.ExpFloat64() * float64(c.SessionInterval))
		stream := make([]uint64, sysFull)
		for i := range stream {
			stream[i] = uint64(i)
		}
		tips := []tip{{at: ms(start), stream: stream, length: c.SystemPromptTokens + c.FirstPromptTokens, prev: -1}}
		for n := 0; n < c.Turns && len(tips) > 0; n++ {
			t := tips[0]
			tips = tips[1:]
			for len(t.stream)*bs < t.length {
				t.stream = append(t.stream, nextID)
				nextID++
			}
			k := len(turns)
			turns = append(turns, turn{req: Request{At: t.at, InputLength: t.length, OutputLength: c.OutputTokens,
				HashIDs: slices.Clone(t.stream[:(t.length+bs-1)/bs]), Prev: -1}, prev: t.prev})
			done := t.at + c.Service.withDefaults().Time(t.length, c.OutputTokens)
			// Rounded up: a next turn never starts before its previous
			// turn's response.
			next := ms(done + time.Duration(rng.ExpFloat64()*float64(c.Gap)) + time.Millisecond - 1)
			grown := t.length + c.OutputTokens + c.PromptGrowth
			// Each branch gets its own ids past the shared prompt.
			tips = append(tips, tip{at: next, stream: slices.Clone(t.stream), length: grown, prev: k})
			if c.ForkProb > 0 && rng.Float64() < c.ForkProb {
				skew := time.Duration(rng.Int64N(int64(c.ForkSkew/time.Millisecond)+1)) * time.Millisecond
				tips = append(tips, tip{at: next + skew, stream: slices.Clone(t.stream), length: grown, prev: k})
			}
			slices.SortStableFunc(tips, func(a, b tip) int { return cmp.Compare(a.at, b.at) })
		}
	}
	order := make([]int, len(turns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(turns[a].req.At, turns[b].req.At) })
	pos := make([]int, len(turns))
	for i, g := range order {
		pos[g] = i
	}
	w := &Workload{Model: c.Model, BlockSize: bs, Requests: make([]Request, len(turns))}
	for i, g := range order {
		r := turns[g].req
		if p := turns[g].prev; p >= 0 {
			r.Prev = pos[p]
		}
		w.Requests[i] = r
	}
	if err := w.finish(c.Service, c.WakeupLead, Signals{}, true); err != nil {
		return nil, err
	}
	return w, nil
}
