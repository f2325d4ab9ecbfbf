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
// signalled at the tool's end, or, once 8 of the tool's times are learned,
// when the tracker fires its predicted prefetch: at the response plus the
// predicted time less the context's load time, if that is before the end.
func TestToolCallsSignalledAtTheirEndOrPredicted(t *testing.T) {
	gap := func(k int) int64 { return 4000 + 1000*int64(1-k%2) } // 4 s after odd turns, 5 s after even
	recs := session(20, gap, func(int) string { return FinishToolCalls })
	o := TraceOptions{BlockSize: 4}
	w := buildBoth(t, recs, o)
	st := w.Stats()
	// Calls 0..7 have under 8 times learned; the p25 of 4 s and 5 s gaps
	// is 4 s, less the 4-token context's load (4 × 147,456 B at 10 GB/s,
	// 58,982 ns): 1 s and that ahead of a 5 s gap, that ahead of a 4 s one.
	const load = 58982 * time.Nanosecond
	if st.Signals.Predicted != 11 || st.Signals.ToolEnd != 8 || st.Signals.Assumed != 0 || st.Signals.FactToolCalls != 20 {
		t.Fatalf("signals %+v", st.Signals)
	}
	for i := 1; i < 20; i++ {
		r := w.Req(i)
		lead := r.At - r.WakeupAt
		want := time.Duration(0)
		switch {
		case i >= 9 && i%2 == 0:
			want = time.Second + load
		case i >= 9:
			want = load
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

// A predicted prefetch fires no earlier than the call's response, and one
// that would fire more than DefaultMaxPredictedLead ahead of its turn is
// counted as signalled at the tool's end.
func TestPredictedLeadBounds(t *testing.T) {
	// Contexts of 2M tokens load in about 29 s: more than any gap here,
	// so the prefetch fires at the response.
	big := session(12, func(int) int64 { return 3000 }, func(int) string { return FinishToolCalls })
	for k := range big {
		big[k].InputLength = 2_000_000 + 4*k
		big[k].HashIDs = nil
		for b := 0; b <= big[k].InputLength/4; b++ {
			big[k].HashIDs = append(big[k].HashIDs, uint64(1000+b))
		}
	}
	w := buildBoth(t, big, TraceOptions{BlockSize: 4})
	for i := 9; i < w.Len(); i++ {
		r := w.Req(i)
		if p := w.Req(i - 1); !r.HasWakeup || r.WakeupAt != p.ResponseAt {
			t.Fatalf("turn %d: wake-up %v at %v, want at the previous response %v", i, r.HasWakeup, r.WakeupAt, p.ResponseAt)
		}
	}
	// Eight 1 s calls, then one of 20 min: its prediction (1 s) would
	// fire 20 min ahead, past the bound.
	recs := session(10, func(k int) int64 {
		if k == 9 {
			return (20 * time.Minute).Milliseconds()
		}
		return 1000
	}, func(int) string { return FinishToolCalls })
	w = buildBoth(t, recs, TraceOptions{BlockSize: 4})
	if r := w.Req(9); !r.HasWakeup || r.WakeupAt != r.At || r.signal != sigToolEnd {
		t.Fatalf("a 20 min call: wake-up %v at %v (turn at %v), signal %d", r.HasWakeup, r.WakeupAt, r.At, r.signal)
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

// Generated sessions with Facts say how every turn ends: their tool calls
// are signalled as Signals say and their human turns are not announced,
// where without Facts every next turn has a wake-up WakeupLead ahead.
func TestGeneratedFactsFollowTheSignals(t *testing.T) {
	cfg := SyntheticConfig{Seed: 3, Sessions: 40, MinTurns: 12, MaxTurns: 20}
	plain, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Facts = true
	facts, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps, fs := plain.Stats(), facts.Stats()
	if ps.Signals.FactTurns != 0 || ps.Signals.Assumed != ps.Requests-40 {
		t.Fatalf("without facts: %+v", ps.Signals)
	}
	if fs.Signals.FactTurns != fs.Requests || fs.Signals.Assumed != 0 || fs.Signals.FactToolCalls != fs.ToolCalls || fs.ToolCalls < ps.ToolCalls ||
		fs.Signals.Predicted == 0 || fs.Signals.Human != 0 ||
		fs.Signals.Predicted+fs.Signals.ToolEnd+fs.Signals.Unannounced != fs.Requests-40 {
		t.Fatalf("with facts: %+v (tool calls %d, without facts %d)", fs.Signals, fs.ToolCalls, ps.ToolCalls)
	}
	for i := range facts.Len() {
		r := facts.Req(i)
		if r.Prev >= 0 && !facts.Req(r.Prev).ToolCall && r.HasWakeup {
			t.Fatalf("turn %d after a human's: wake-up at %v", i, r.WakeupAt)
		}
	}
}
