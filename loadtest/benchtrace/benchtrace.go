// Package benchtrace writes Mooncake-format traces shaped like
// long-context agentic coding traffic, as input for measuring how fast
// whatif plays such traffic (BenchmarkWhatifAgentic). It is a benchmark
// input, not a workload model: its figures are what the speed target
// names (about 49 requests a conversation, prompts of 9K–900K tokens
// with a median near 110K, each turn's blocks the previous turn's plus
// new ones), not a fit of any trace.
package benchtrace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Options shape a trace. Zero fields take the defaults.
type Options struct {
	Requests  int    // requests in the trace; default 6,400
	BlockSize int    // tokens per hash_ids block; default 512
	Seed      uint64 // default 1
	// Facts: each line says how its turn ended ("finish_reason":
	// "tool_calls" with a "tool", or "stop"), as a real agentic trace
	// does; whatif then signals next turns as the agent tracker would.
	Facts bool
}

// Shape of the traffic, in blocks of BlockSize tokens at 512.
const (
	sharedPrefixBlocks = 30        // tools and system prompt, every conversation's (15K tokens)
	maxBlocks          = 1750      // 896K tokens: a longer context is compacted
	turnsMedian        = 36        // requests a conversation (lognormal)
	turnsSigma         = 0.8       // → mean about 49
	growthMedian       = 5.0       // blocks a turn adds (lognormal per conversation)
	growthSigma        = 0.45      //
	toolShare          = 0.85      // turns ending in a tool call
	toolGapMedianS     = 8.0       // gap after a tool call: median 8 s, P90 70 s
	toolGapSigma       = 1.69      //
	humanGapMedianS    = 210.0     // gap after a human's turn
	humanGapSigma      = 1.2       //
	outputMedian       = 220.0     // output tokens: median 220, P90 940
	outputSigma        = 1.13      //
	startsPer6400S     = 3 * 3600. // conversations start over 3 h per 6,400 requests
)

type line struct {
	at      int64
	input   int
	output  int
	ids     []uint64
	session int
	tool    int // the tool called, 0: none (a human's turn follows)
}

// tools are the tool names a line with Facts calls, in turn.
var tools = [...]string{"", "bash", "read", "edit", "grep", "write"}

// Write writes the trace to w, in time order.
func Write(w io.Writer, o Options) error {
	if o.Requests <= 0 {
		o.Requests = 6400
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 512
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	logn := func(median, sigma float64) float64 { return median * math.Exp(sigma*rng.NormFloat64()) }
	next := uint64(1)
	fresh := func(ids []uint64, n int) []uint64 {
		for range n {
			ids = append(ids, next)
			next++
		}
		return ids
	}
	shared := fresh(nil, sharedPrefixBlocks)
	span := startsPer6400S * float64(o.Requests) / 6400
	var lines []line
	for session := 0; len(lines) < o.Requests; session++ {
		turns := min(max(int(logn(turnsMedian, turnsSigma)), 2), 400, o.Requests-len(lines))
		growth := max(logn(growthMedian, growthSigma), 0.5)
		at := rng.Float64() * span
		ids := fresh(slices.Clone(shared), 1+rng.IntN(8))
		carry := 0.0
		for range turns {
			out := min(max(int(logn(outputMedian, outputSigma)), 1), 16384)
			input := len(ids)*o.BlockSize - rng.IntN(o.BlockSize)
			lines = append(lines, line{at: int64(at * 1000), input: input, output: out, ids: ids, session: session})
			// The next turn: this one's blocks, then its output and what
			// the tool (or the human) added.
			carry += logn(growth, 0.5)
			add := max(int(carry), 1)
			carry -= float64(add)
			if len(ids)+add > maxBlocks {
				// Compacted: the shared prefix and a summary.
				ids = fresh(slices.Clone(shared), 20+rng.IntN(20))
			} else {
				ids = fresh(slices.Clone(ids), add)
			}
			gap := logn(toolGapMedianS, toolGapSigma)
			if rng.Float64() >= toolShare {
				gap = logn(humanGapMedianS, humanGapSigma)
			} else {
				lines[len(lines)-1].tool = 1 + len(lines)%(len(tools)-1)
			}
			at += 1 + min(gap, 3600)
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.session - b.session
	})
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for _, l := range lines {
		buf = append(buf[:0], `{"timestamp":`...)
		buf = strconv.AppendInt(buf, l.at, 10)
		buf = append(buf, `,"input_length":`...)
		buf = strconv.AppendInt(buf, int64(l.input), 10)
		buf = append(buf, `,"output_length":`...)
		buf = strconv.AppendInt(buf, int64(l.output), 10)
		buf = append(buf, `,"hash_ids":[`...)
		for k, id := range l.ids {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendUint(buf, id, 10)
		}
		buf = append(buf, `],"session_id":"c`...)
		buf = strconv.AppendInt(buf, int64(l.session), 10)
		switch {
		case o.Facts && l.tool > 0:
			buf = append(buf, `","finish_reason":"tool_calls","tool":"`...)
			buf = append(buf, tools[l.tool]...)
		case o.Facts:
			buf = append(buf, `","finish_reason":"stop`...)
		}
		buf = append(buf, "\"}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("benchtrace: %w", err)
		}
	}
	return bw.Flush()
}
