package metrics

import "github.com/prometheus/client_golang/prometheus"

// Label values of the agent families.
var (
	// AgentEventTypes are the tool lifecycle records counted.
	AgentEventTypes = []string{"tool_start", "tool_end", "tool_error"}
	// AgentHintKinds are why an agent hint was sent.
	AgentHintKinds = []string{"tool_start_pin", "tool_end_prefetch", "predicted_prefetch", "speculative_prefetch"}
	// PrefetchTimings classify a predicted prefetch against the tool's
	// real end: late (not loaded by then), on_time, early (expired first).
	PrefetchTimings = []string{"early", "on_time", "late"}
	// HintOutcomes are the fates of a hint, by hint.
	HintOutcomes = map[string][]string{
		"prefetch": {"used", "wrong_worker", "expired", "not_loaded"},
		"pin":      {"kept", "lapsed", "released"},
	}
)

// Agent are the families of agent-aware hints (package agents): what the
// harnesses said, what was sent on it, and what became of it.
type Agent struct {
	Events    *CounterVec // by event type
	Malformed *CounterVec // by decode reason
	Hints     *CounterVec // by kind
	Timing    *CounterVec // predicted prefetches by timing
	// Suppressed counts prefetches not sent because their workflow type or
	// tool class's were mostly unused (by which of the two).
	Suppressed  *CounterVec
	TokensSaved *Counter
	outcomes    *prometheus.CounterVec
}

// NewAgent returns f's agent families (defined with f by New).
func NewAgent(f *Families) *Agent {
	if f.Agent == nil {
		f.Agent = newAgent(f)
	}
	return f.Agent
}

// newAgent defines the agent families on f's registry.
func newAgent(f *Families) *Agent {
	b := builder{&f.set}
	a := &Agent{
		Events:    b.vec("hintstream_agent_events_received_total", "event", "Agent tool lifecycle records applied, by event type.", AgentEventTypes...),
		Malformed: b.vec("hintstream_agent_events_malformed_total", "reason", "Agent tool records dead-lettered and skipped, by reason.", "record too large", "unsupported schema", "not a tool event"),
		Hints:     b.vec("hintstream_agent_hints_total", "kind", "Hints sent on an agent's signals, by kind (tool_start_pin, tool_end_prefetch, predicted_prefetch, speculative_prefetch).", AgentHintKinds...),
		Timing: b.vec("hintstream_agent_predicted_prefetch_total", "timing",
			"Predicted prefetches (at tool start + predicted time - load time) against the tool's real end: late (not loaded by then), on_time, early (expired before it).", PrefetchTimings...),
		Suppressed: b.vec("hintstream_agent_prefetch_suppressed_total", "scope", "Agent prefetches not sent because most of that workflow type's or tool class's prefetches went unused.", "workflow_type", "tool_class"),
		TokensSaved: b.counter("hintstream_prefill_tokens_saved_total",
			"Estimated prefill tokens the hints saved: a used prefetch's tokens, a kept pin's tokens."),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "hint_outcomes_total",
			Help: "Hints by what became of them: prefetch used, wrong_worker, expired or not_loaded; pin kept, lapsed or released."},
			[]string{"hint", "outcome"}),
	}
	for hint, outs := range HintOutcomes {
		for _, o := range outs {
			a.outcomes.WithLabelValues(hint, o)
		}
	}
	f.reg.MustRegister(a.outcomes)
	f.all = append(f.all, outcomeFamily{a})
	return a
}

// outcomeFamily exports the two-label outcomes beside the other families.
type outcomeFamily struct{ a *Agent }

func (o outcomeFamily) Describe(ch chan<- *prometheus.Desc) { o.a.outcomes.Describe(ch) }
func (o outcomeFamily) Collect(ch chan<- prometheus.Metric) { o.a.outcomes.Collect(ch) }
func (o outcomeFamily) Name() string                        { return ns + "hint_outcomes_total" }
func (o outcomeFamily) summarize(out map[string]uint64) {
	for k, v := range o.a.OutcomeValues() {
		if v > 0 {
			out["hint_outcomes|"+k] = v
		}
	}
}

// Outcome counts one hint's fate; hint and outcome must be of
// HintOutcomes (others are counted under outcome "other", never minted).
func (a *Agent) Outcome(hint, outcome string) {
	for _, o := range HintOutcomes[hint] {
		if o == outcome {
			a.outcomes.WithLabelValues(hint, outcome).Inc()
			return
		}
	}
	a.outcomes.WithLabelValues("other", "other").Inc()
}

// OutcomeValues returns the counts by "hint/outcome".
func (a *Agent) OutcomeValues() map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range collect(a.outcomes) {
		var hint, outcome string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "hint":
				hint = l.GetValue()
			case "outcome":
				outcome = l.GetValue()
			}
		}
		out[hint+"/"+outcome] = uint64(m.GetCounter().GetValue())
	}
	return out
}
