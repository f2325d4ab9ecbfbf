package whatif

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// The simulated prediction is hintstream run's: whatif/workload repeats
// its defaults, as it cannot import decide/agents.
func TestSignalDefaultsAreRuns(t *testing.T) {
	if workload.DefaultPredictPercentile != agents.DefaultPredictPercentile ||
		workload.DefaultPredictMinSamples != agents.DefaultPredictMinSamples ||
		workload.DefaultPrefetchTTL != engine.DefaultPrefetchTTL {
		t.Fatalf("whatif/workload's prediction defaults (%v, %d, %v) differ from run's (%v, %d, %v)",
			workload.DefaultPredictPercentile, workload.DefaultPredictMinSamples, workload.DefaultPrefetchTTL,
			agents.DefaultPredictPercentile, agents.DefaultPredictMinSamples, engine.DefaultPrefetchTTL)
	}
}

// The report says which signals a run assumed: on a trace without
// finish_reason, the assumed rule; on one with, the settings and counts.
func TestReportSaysWhichSignalsWereAssumed(t *testing.T) {
	recs := []workload.Record{
		{Timestamp: 0, InputLength: 1024, OutputLength: 8, HashIDs: []uint64{1, 2}, Session: "a", FinishReason: "tool_calls", Tool: "bash"},
		{Timestamp: 3000, InputLength: 1536, OutputLength: 8, HashIDs: []uint64{1, 2, 3}, Session: "a", FinishReason: "stop"},
		{Timestamp: 300000, InputLength: 2048, OutputLength: 8, HashIDs: []uint64{1, 2, 3, 4}, Session: "a"},
		{Timestamp: 400000, InputLength: 2560, OutputLength: 8, HashIDs: []uint64{1, 2, 3, 4, 5}, Session: "a"},
	}
	pols := []simulate.Policy{simulate.Policies()[0]}
	rep, err := Run(context.Background(), Source{Name: "t", Records: recs}, Options{Cluster: DefaultCluster(), Policies: pols})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Signals
	// Turn 1 follows a tool call: at its end (no prediction learned);
	// turn 2 a human's turn: not announced; turn 3 follows a turn that
	// says nothing: assumed, a tool call announced 1 s ahead.
	if s == nil || s.FactTurns != 2 || s.FactToolCalls != 1 || s.AssumedToolCalls != 1 || s.ToolEndWakeups != 1 ||
		s.Unannounced != 1 || s.AssumedWakeups != 1 || s.PredictedWakeups != 0 || s.ToolSignal != workload.SignalPredicted ||
		len(s.Assumptions) != 2 {
		t.Fatalf("signals %+v", s)
	}
	var text, js bytes.Buffer
	if err := rep.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Signals Signals `json:"signals"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Signals.ToolEndWakeups != 1 || back.Signals.HumanWakeupLeadS != 1 {
		t.Fatalf("--json signals %+v (%v)", back.Signals, err)
	}
	for _, want := range []string{"assumed: 2 of 4 turns do not say how they end", "1 at the end", "a share 0 of them"} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("text lacks %q:\n%s", want, text.String())
		}
	}
}
