package whatif

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// Signals is what a run assumed of the signals a deployment has: how each
// next turn was announced, by which rule, with which settings
// (workload.Signals), and the assumptions in words.
type Signals struct {
	// ToolSignal, HumanWakeupShare and HumanWakeupLeadS are the settings
	// for turns whose finish the trace gives; AssumedWakeupLeadS the
	// lead of the assumed rule for those it does not.
	ToolSignal         string  `json:"tool_signal"`
	HumanWakeupShare   float64 `json:"human_wakeup_share"`
	HumanWakeupLeadS   float64 `json:"human_wakeup_lead_s"`
	AssumedWakeupLeadS float64 `json:"assumed_wakeup_lead_s"`
	// FactTurns said whether they end in a tool call (finish_reason),
	// FactToolCalls of them did; AssumedToolCalls are tool calls the
	// assumed rule made.
	FactTurns        int `json:"fact_turns"`
	FactToolCalls    int `json:"fact_tool_calls"`
	AssumedToolCalls int `json:"assumed_tool_calls"`
	// How the next turns were announced.
	AssumedWakeups   int `json:"assumed_wakeups"`
	ToolEndWakeups   int `json:"tool_end_wakeups"`
	PredictedWakeups int `json:"predicted_wakeups"`
	HumanWakeups     int `json:"human_wakeups"`
	Unannounced      int `json:"unannounced"`
	// Assumptions say the above in words, one sentence each.
	Assumptions []string `json:"assumptions"`
}

// signalsOf reports the rules w's wake-ups were made by.
func signalsOf(w *workload.Workload, st workload.Stats) *Signals {
	c := st.Signals
	sig := w.Signals
	s := &Signals{ToolSignal: sig.Tool, HumanWakeupShare: sig.HumanShare, HumanWakeupLeadS: sig.HumanLead.Seconds(),
		AssumedWakeupLeadS: w.AssumedLead.Seconds(), FactTurns: c.FactTurns, FactToolCalls: c.FactToolCalls,
		AssumedToolCalls: st.ToolCalls - c.FactToolCalls, AssumedWakeups: c.Assumed, ToolEndWakeups: c.ToolEnd,
		PredictedWakeups: c.Predicted, HumanWakeups: c.Human, Unannounced: c.Unannounced}
	if others := st.Requests - c.FactTurns; others > 0 {
		s.Assumptions = append(s.Assumptions, fmt.Sprintf(
			"%d of %d turns do not say how they end (no finish_reason): assumed, as whatif always has, that %d of them end in a tool call (in a trace, every turn that has a next turn) and that every next turn is announced by a wake-up %s ahead (%d wake-ups)",
			others, st.Requests, s.AssumedToolCalls, dur(w.AssumedLead), c.Assumed))
	}
	if c.FactTurns > 0 {
		tool := "at the tool's end (tool_end, the next request's time: no lead)"
		if sig.Tool == workload.SignalPredicted {
			tool = fmt.Sprintf("when the agent tracker's predicted prefetch fires (the response plus the p%g of the tool's learned times after %d of them, less the context's load time; at most %s ahead; sent again at the tool's end, to the same worker, if it expired first) or else at the tool's end (no lead)",
				100*workload.DefaultPredictPercentile, workload.DefaultPredictMinSamples, dur(workload.DefaultMaxPredictedLead))
		}
		s.Assumptions = append(s.Assumptions, fmt.Sprintf(
			"%d turns say how they end, %d in a tool call: a tool call's next turn is signalled %s (%d predicted, %d at the end); a human's next turn is announced by a wake-up %s ahead for a share %g of them (%d), the rest not at all (%d)",
			c.FactTurns, c.FactToolCalls, tool, c.Predicted, c.ToolEnd, dur(sig.HumanLead), sig.HumanShare, c.Human, c.Unannounced))
	}
	return s
}

func dur(d time.Duration) string { return d.String() }

func (s *Signals) text(w io.Writer) {
	for _, a := range s.Assumptions {
		fmt.Fprintf(w, "assumed: %s.\n", a)
	}
}

// The generated workloads --workload names.
const (
	WorkloadAgent    = "agent"
	WorkloadSessions = "sessions"
)

// GeneratedSource is the generated workload name (WorkloadAgent: the
// long-context coding-agent profile, workload.GenerateAgent; or
// WorkloadSessions: the synthetic agentic sessions, workload.Generate)
// from seed, as a Source Run plays.
func GeneratedSource(name string, seed uint64, blockSize int, sig workload.Signals) (Source, error) {
	var w *workload.Workload
	var err error
	switch name {
	case WorkloadAgent:
		w, err = workload.GenerateAgent(workload.AgentConfig{Seed: seed, BlockSize: blockSize, Signals: sig})
	case WorkloadSessions:
		w, err = workload.Generate(workload.SyntheticConfig{Seed: seed, BlockSize: blockSize})
	default:
		return Source{}, fmt.Errorf("%w: --workload %q (want %s or %s)", ErrInvalidOption, name, WorkloadAgent, WorkloadSessions)
	}
	if err != nil {
		return Source{}, err
	}
	c := newReuseCounter(w.BlockSize)
	for i := range w.Len() {
		r := w.Req(i)
		c.add(workload.Record{InputLength: r.InputLength, HashIDs: r.HashIDs})
	}
	return Source{Name: fmt.Sprintf("%s workload (seed %d)", name, seed), Workload: w, Reusable: c.share()}, nil
}

// SpoolTraceSignals is SpoolTrace with next turns announced as sig says
// where the trace gives the turns' finish.
func SpoolTraceSignals(f *os.File, blockSize int, skipBad bool, dir string, sig workload.Signals) (Source, error) {
	return spoolTrace(f, workload.TraceOptions{BlockSize: blockSize, Signals: sig}, skipBad, dir)
}
