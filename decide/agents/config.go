// Package agents turns what an agent stack says out loud into hints and
// tells what became of them. It follows each agent program (Dynamo's
// nvext.agent_context on requests, the harness's tool records from
// package agentevents) and, through the decision engine:
//
//   - at tool_start pins the program's context (last prompt and response)
//     unless the tool-call response already pinned it;
//   - at tool_end / tool_error learns the tool's duration and prefetches
//     the context to the worker the next turn would be routed to;
//   - once a tool class has enough samples, prefetches ahead of the end
//     (tool start + predicted time - load time at the L3 bandwidth),
//     counting each such prefetch early, on time or late;
//   - on a turn with agent_hints.speculative_prefill, prefetches prompt
//     plus response at the turn's end as a wake-up for the next;
//   - reports each hint's outcome (prefetch used, wrong_worker, expired,
//     not_loaded; pin kept, lapsed, released) and sends fewer prefetches
//     for a workflow type or tool class whose prefetches go mostly unused.
//
// State is bounded: at most Config.MaxPrograms programs (least recently
// seen evicted) and Config.Recent outcomes kept for inspection.
package agents

import (
	"errors"
	"flag"
	"fmt"
	"github.com/hintstream/hintstream/schemas"
	"strconv"
	"time"
)

// ErrInvalidOption wraps every Config error.
var ErrInvalidOption = errors.New("agents: invalid option")

// Defaults of Config.
const (
	DefaultMaxPrograms = 4096
	// DefaultPredictPercentile is the quantile of a tool class's durations
	// a predicted prefetch aims at: low, so that most tools are still
	// running when their context arrives.
	DefaultPredictPercentile = 0.25
	DefaultPredictMinSamples = 8
	DefaultRecent            = 256
	// DefaultFeedbackWindow is how many recent prefetch outcomes per
	// workflow type and per tool class the feedback looks at, and
	// DefaultFeedbackUnused the unused share above which it sends only
	// one prefetch in DefaultFeedbackKeep (the rest keep measuring).
	DefaultFeedbackWindow = 32
	DefaultFeedbackUnused = 0.75
	DefaultFeedbackKeep   = 4
)

// Config is the agent hints' policy.
type Config struct {
	MaxPrograms       int
	L3Bandwidth       float64 // bytes/s
	KVBytesPerToken   int
	PredictPercentile float64
	MinSamples        int
	Recent            int
	FeedbackWindow    int
	FeedbackUnused    float64
	FeedbackKeep      int
	// Predict turns predicted prefetches on (default on).
	Predict bool
	// Feedback turns the unused-prefetch feedback on (default on).
	Feedback bool
	// Affinity says the engine writes affinity records, by which a
	// frontend routes a turn to its latest prefetch's worker. A tool_end
	// prefetch with no prediction fired before it then names the worker
	// that answered the call, which holds the context: sent at the turn,
	// it cannot load anything elsewhere in time. Not a flag: the service
	// sets it from --affinity-bucket (default off here).
	Affinity bool
}

// DefaultConfig is every default.
func DefaultConfig() Config {
	return Config{MaxPrograms: DefaultMaxPrograms, L3Bandwidth: schemas.DefaultL3Bandwidth, KVBytesPerToken: schemas.DefaultKVBytesPerToken,
		PredictPercentile: DefaultPredictPercentile, MinSamples: DefaultPredictMinSamples, Recent: DefaultRecent,
		FeedbackWindow: DefaultFeedbackWindow, FeedbackUnused: DefaultFeedbackUnused, FeedbackKeep: DefaultFeedbackKeep,
		Predict: true, Feedback: true}
}

// l3GBps is --l3-bandwidth's unit.
const l3GBps = 1e9

// RegisterFlags defines the flags of c on fs, c's values as defaults.
// --l3-bandwidth is the one definition of the shared store's load rate.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(l3Rate{&c.L3Bandwidth}, "l3-bandwidth", fmt.Sprintf("rate KV loads from the shared store (L3) into a device, GB/s [%g]", c.L3Bandwidth/l3GBps))
	fs.IntVar(&c.KVBytesPerToken, "kv-bytes-per-token", c.KVBytesPerToken, "KV cache bytes per token (load time = tokens x this / --l3-bandwidth)")
	fs.IntVar(&c.MaxPrograms, "agent-max-programs", c.MaxPrograms, "agent programs followed at most (least recently seen forgotten)")
	fs.IntVar(&c.MinSamples, "agent-predict-min-samples", c.MinSamples, "tool durations of a class needed before its prefetches are sent ahead of the end")
	fs.BoolVar(&c.Predict, "agent-predict", c.Predict, "send prefetches ahead of a tool's predicted end")
	fs.BoolVar(&c.Feedback, "agent-feedback", c.Feedback, "send fewer prefetches for workflow types and tool classes whose prefetches go mostly unused")
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.MaxPrograms < 1:
		return fmt.Errorf("%w: max programs %d, want >= 1", ErrInvalidOption, c.MaxPrograms)
	case !(c.L3Bandwidth > 0):
		return fmt.Errorf("%w: L3 bandwidth %g, want > 0", ErrInvalidOption, c.L3Bandwidth)
	case c.KVBytesPerToken < 1:
		return fmt.Errorf("%w: KV bytes per token %d, want >= 1", ErrInvalidOption, c.KVBytesPerToken)
	case !(c.PredictPercentile > 0 && c.PredictPercentile <= 1):
		return fmt.Errorf("%w: predict percentile %g, want (0, 1]", ErrInvalidOption, c.PredictPercentile)
	case c.MinSamples < 1:
		return fmt.Errorf("%w: min samples %d, want >= 1", ErrInvalidOption, c.MinSamples)
	case c.Recent < 1:
		return fmt.Errorf("%w: recent %d, want >= 1", ErrInvalidOption, c.Recent)
	case c.FeedbackWindow < 1 || c.FeedbackKeep < 1 || !(c.FeedbackUnused > 0 && c.FeedbackUnused <= 1):
		return fmt.Errorf("%w: feedback window %d, keep %d, unused share %g", ErrInvalidOption, c.FeedbackWindow, c.FeedbackKeep, c.FeedbackUnused)
	}
	return nil
}

// LoadTime is how long tokens take to load from L3 into a device.
func (c Config) LoadTime(tokens int) time.Duration {
	return time.Duration(float64(tokens) * float64(c.KVBytesPerToken) / c.L3Bandwidth * float64(time.Second))
}

// l3Rate is --l3-bandwidth: GB/s on the command line, bytes/s in the
// Config. Its String gives the value in GB/s, so that other flags'
// appliers read the one definition.
type l3Rate struct{ v *float64 }

func (r l3Rate) String() string {
	if r.v == nil {
		return ""
	}
	return strconv.FormatFloat(*r.v/l3GBps, 'g', -1, 64)
}

func (r l3Rate) Set(s string) error {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return fmt.Errorf("%w: --l3-bandwidth %q", ErrInvalidOption, s)
	}
	*r.v = v * l3GBps
	return nil
}
