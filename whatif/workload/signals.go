package workload

import (
	"fmt"
	"math"
	"time"

	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/schemas"
)

// FinishToolCalls is the finish_reason of a response that ends in a tool
// call (OpenAI's, which Dynamo's frontend and the response stream carry).
const FinishToolCalls = "tool_calls"

// How a tool call's next turn is signalled (Signals.Tool).
const (
	// SignalToolEnd: at the tool's end, which is when the next request
	// comes (the harness's tool_end): no lead.
	SignalToolEnd = "end"
	// SignalPredicted: when the agent tracker fires its predicted
	// prefetch (decide/agents Tracker.toolStart): the call's response plus
	// the predicted tool time (the DefaultPredictPercentile of the tool's
	// learned times, once it has DefaultPredictMinSamples) less the time
	// the context takes to load, if that is before the tool's end; at the
	// tool's end otherwise (the prediction is late, or there is none),
	// as the tracker sends one at tool_end then.
	SignalPredicted = "predicted"
)

// Defaults of Signals. The prediction's are hintstream run's (decide/agents
// DefaultPredictPercentile and DefaultPredictMinSamples, decide/engine
// DefaultPrefetchTTL), which this package cannot import (decide/agents'
// tests import it); whatif's TestSignalDefaultsAreRuns holds them equal.
const (
	DefaultToolSignal        = SignalPredicted
	DefaultHumanWakeupShare  = 0.0
	DefaultHumanWakeupLead   = time.Second
	DefaultPredictPercentile = 0.25
	DefaultPredictMinSamples = 8
	DefaultPrefetchTTL       = 2 * time.Second
	// DefaultMaxPredictedLead is the earliest, before its turn, that a
	// predicted prefetch is modelled: one fired earlier still loads in
	// the tracker, but whatif counts it as signalled at the tool's end
	// (where the tracker sends again). A bound is needed, as the spooled
	// play orders events in a window of the longest lead; 5 min keeps all
	// but the slowest tool calls (the published P99 gap is near 600 s)
	// and errs against hintstream on those.
	DefaultMaxPredictedLead = 5 * time.Minute
)

// Signals say which next turns a deployment announces, and when, where
// the trace says which turns end in a tool call (Record.FinishReason).
// Turns it says nothing of keep the assumed rule (TraceOptions.WakeupLead).
type Signals struct {
	// Tool is SignalToolEnd or SignalPredicted ("": DefaultToolSignal).
	Tool string
	// HumanShare of the turns that follow a response without a tool call
	// (a human's turn) are announced by a wake-up HumanLead before them,
	// never before that response (a client that sends one when its user
	// starts typing). Default 0 (negative: 0), lead 1 s.
	HumanShare float64
	HumanLead  time.Duration
}

func (s Signals) withDefaults() Signals {
	if s.Tool == "" {
		s.Tool = DefaultToolSignal
	}
	if s.HumanLead <= 0 {
		s.HumanLead = DefaultHumanWakeupLead
	}
	s.HumanShare = max(s.HumanShare, 0)
	return s
}

// Validate refuses a setting that cannot be used.
func (s Signals) Validate() error {
	switch {
	case s.Tool != "" && s.Tool != SignalToolEnd && s.Tool != SignalPredicted:
		return fmt.Errorf("%w: tool-call signal %q (want %q or %q)", ErrInvalid, s.Tool, SignalToolEnd, SignalPredicted)
	case math.IsNaN(s.HumanShare) || s.HumanShare > 1:
		return fmt.Errorf("%w: human wake-up share %v (want 0 … 1)", ErrInvalid, s.HumanShare)
	}
	return nil
}

// maxLead is the most any wake-up comes before its request.
func (s Signals) maxLead(assumed time.Duration) time.Duration {
	return max(assumed, s.HumanLead, DefaultMaxPredictedLead)
}

// contextLoadTime is how long the tracker reckons a context of tokens
// takes to load from L3 into a device: hintstream run's defaults
// (decide/agents Config.LoadTime over schemas.DefaultKVBytesPerToken and
// DefaultL3Bandwidth), not the simulated cluster's, as the tracker knows
// only its flags.
func contextLoadTime(tokens int) time.Duration {
	return time.Duration(float64(tokens) * schemas.DefaultKVBytesPerToken / schemas.DefaultL3Bandwidth * float64(time.Second))
}

// How a request's wake-up was decided (SignalCounts).
const (
	sigNone uint8 = iota
	sigAssumed
	sigToolEnd
	sigPredicted
	sigHuman
)

// SignalCounts say how the workload's next turns were announced: by the
// assumed rule (no facts: every next turn a wake-up WakeupLead ahead), at
// a tool's end, at a predicted tool end, by a human turn's wake-up, or
// not at all; and of how many turns the trace said whether they end in a
// tool call.
type SignalCounts struct {
	Assumed, ToolEnd, Predicted, Human, Unannounced int
	// FactTurns said (finish_reason) whether they end in a tool call;
	// FactToolCalls of them did.
	FactTurns, FactToolCalls int
}

// signaller decides, request by request in index order, the wake-ups of
// next turns whose previous turn's finish is known.
type signaller struct {
	s     Signals
	lead  time.Duration // the assumed rule's
	learn *tooltime.Learner
}

func newSignaller(s Signals, lead time.Duration) *signaller {
	return &signaller{s: s.withDefaults(), lead: lead, learn: tooltime.New(tooltime.Config{
		Percentile: DefaultPredictPercentile, MinSamples: DefaultPredictMinSamples})}
}

// observe learns a tool's time once its result came back (its next turn).
func (g *signaller) observe(tool string, d time.Duration) { g.learn.Observe(tool, d) }

// predict is the tool time predicted at a call, from the times of the
// calls whose next turn came before it; 0 when none is learned yet.
func (g *signaller) predict(tool string) time.Duration {
	if g.s.Tool != SignalPredicted {
		return 0
	}
	d, src := g.learn.Expected([]string{tool})
	if src != tooltime.Learned && src != tooltime.AnyTool {
		return 0
	}
	return max(d, 1)
}

// prevFacts is what wakeup needs of the previous turn.
type prevFacts struct {
	known, toolCall bool
	responseAt      time.Duration
	predicted       time.Duration // 0: none
	// tokens is the previous turn's context (prompt and response), what
	// a predicted prefetch loads.
	tokens int
}

// wakeup is request i's (at at) wake-up after the previous turn p.
func (g *signaller) wakeup(i int, at time.Duration, p prevFacts) (time.Duration, uint8) {
	switch {
	case !p.known:
		return max(at-g.lead, p.responseAt), sigAssumed
	case p.toolCall:
		if p.predicted > 0 {
			t := max(p.responseAt+p.predicted-contextLoadTime(p.tokens), p.responseAt)
			if t < at && t >= at-DefaultMaxPredictedLead {
				return t, sigPredicted
			}
		}
		return at, sigToolEnd
	case humanDraw(i) < g.s.HumanShare:
		return max(at-g.s.HumanLead, p.responseAt), sigHuman
	}
	return 0, sigNone
}

// humanDraw is request i's uniform draw in [0, 1) for the human wake-up
// share: a hash of its index, so the same trace gives the same wake-ups.
func humanDraw(i int) float64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

func (c *SignalCounts) add(kind uint8) {
	switch kind {
	case sigAssumed:
		c.Assumed++
	case sigToolEnd:
		c.ToolEnd++
	case sigPredicted:
		c.Predicted++
	case sigHuman:
		c.Human++
	default:
		c.Unannounced++
	}
}
