package workload

import (
	"testing"
	"time"
)

// session makes n turns of one named session, turn k's gap after turn
// k−1 gap(k) ms, each turn's finish_reason finish(k) ("" for none).
func session(n int, gap func(k int) int64, finish func(k int) string) []Record {
	recs := make([]Record, n)
	var ts int64
	for k := range recs {
		if k > 0 {
			ts += gap(k)
		}
		recs[k] = Record{Timestamp: ts, InputLength: 4, HashIDs: []uint64{uint64(100 + k)}, Session: "a",
			FinishReason: finish(k)}
		if recs[k].FinishReason == FinishToolCalls {
			recs[k].Tool = "bash"
		}
	}
	return recs
}

func buildBoth(t *testing.T, recs []Record, o TraceOptions) *Workload {
	t.Helper()
	w, err := FromRecords(recs, o)
	if err != nil {
		t.Fatal(err)
	}
	sameWorkload(t, w, spoolOf(t, recs, o))
	return w
}

// Where the trace says a turn ends in a tool call, its next turn is
// signalled at the tool's end, or at the predicted end once 8 of the
// tool's times are learned and the prediction falls within the prefetch
// TTL before the end; no wake-up comes ahead of that.
func TestToolCallsSignalledAtTheirEndOrPredicted(t *testing.T) {
	gap := func(k int) int64 { return 4000 + 1000*int64(1-k%2) } // 4 s after odd turns, 5 s after even
	recs := session(20, gap, func(int) string { return FinishToolCalls })
	o := TraceOptions{BlockSize: 4}
	w := buildBoth(t, recs, o)
	st := w.Stats()
	// Calls 0..7 have under 8 times learned; the p25 of 4 s and 5 s gaps
	// is the 4 s one, which comes 1 s early for a 5 s gap (in the TTL)
	// and on time for a 4 s one (no lead: at the end).
	if st.Signals.Predicted != 5 || st.Signals.ToolEnd != 14 || st.Signals.Assumed != 0 || st.Signals.FactToolCalls != 20 {
		t.Fatalf("signals %+v", st.Signals)
	}
	for i := 1; i < 20; i++ {
		r := w.Req(i)
		lead := r.At - r.WakeupAt
		want := time.Duration(0)
		if i >= 10 && i%2 == 0 {
			want = time.Second
		}
		if !r.HasWakeup || lead != want || r.Tool != "bash" || !w.Req(i-1).ToolCall {
			t.Fatalf("turn %d: wake-up %v lead %v (want %v), tool %q", i, r.HasWakeup, lead, want, r.Tool)
		}
	}
	// At the tool's end only: no lead anywhere.
	o.Signals.Tool = SignalToolEnd
	if st := buildBoth(t, recs, o).Stats(); st.Signals.ToolEnd != 19 || st.Signals.Predicted != 0 {
		t.Fatalf("tool-end signals %+v", st.Signals)
	}
}

// A turn the trace says ends without a tool call is not made one, and
// its next turn (a human's) is announced only as the settings say.
func TestHumanTurnsAnnouncedOnlyAsSettingsSay(t *testing.T) {
	recs := session(200, func(int) int64 { return 200_000 }, func(int) string { return "stop" })
	w := buildBoth(t, recs, TraceOptions{BlockSize: 4})
	if st := w.Stats(); st.ToolCalls != 0 || st.Wakeups != 0 || st.Signals.Unannounced != 199 {
		t.Fatalf("by default: %+v", st)
	}
	w = buildBoth(t, recs, TraceOptions{BlockSize: 4, Signals: Signals{HumanShare: 0.3, HumanLead: 5 * time.Second}})
	st := w.Stats()
	if st.ToolCalls != 0 || st.Signals.Human < 40 || st.Signals.Human > 80 || st.Signals.Human+st.Signals.Unannounced != 199 {
		t.Fatalf("a 30%% share: %+v", st)
	}
	for i := 1; i < w.Len(); i++ {
		if r := w.Req(i); r.HasWakeup && r.At-r.WakeupAt != 5*time.Second {
			t.Fatalf("turn %d: lead %v", i, r.At-r.WakeupAt)
		}
	}
	// Without facts, today's rule: every next turn a tool call, a wake-up
	// WakeupLead ahead.
	for k := range recs {
		recs[k].FinishReason = ""
	}
	if st := buildBoth(t, recs, TraceOptions{BlockSize: 4}).Stats(); st.ToolCalls != 199 || st.Signals.Assumed != 199 || st.Signals.FactTurns != 0 {
		t.Fatalf("without facts: %+v", st)
	}
}

func TestSignalsRefuseBadSettings(t *testing.T) {
	recs := session(3, func(int) int64 { return 10 }, func(int) string { return "stop" })
	for _, s := range []Signals{{Tool: "soon"}, {HumanShare: 1.5}} {
		if _, err := FromRecords(recs, TraceOptions{BlockSize: 4, Signals: s}); err == nil {
			t.Fatalf("%+v accepted", s)
		}
		if _, err := Spool(recordsOf(recs), TraceOptions{BlockSize: 4, Signals: s}, t.TempDir()); err == nil {
			t.Fatalf("%+v accepted by Spool", s)
		}
	}
}
