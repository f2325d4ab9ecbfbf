package agents

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// world stands in for the engine and the cluster: it routes every
// context to one worker, remembers what it sent, and says which blocks
// the index shows (loaded). The tracker's own logic is under test; the
// engine's sending is tested in package engine and end to end.
type world struct {
	now      time.Time
	worker   uint64
	gone     uint64 // a worker that left: a prefetch naming it is refused
	loaded   bool
	pinTTL   time.Duration
	prefetch []*schemas.RequestEvent
	pins     []*schemas.ResponseEvent
}

func (w *world) PrefetchContext(req *schemas.RequestEvent) (engine.Sent, bool) {
	c := *req // the tracker may send the same request again, changed
	w.prefetch = append(w.prefetch, &c)
	if req.WorkerID != 0 && req.WorkerID == w.gone {
		return engine.Sent{}, false
	}
	to := w.worker
	if req.WorkerID != 0 { // as the engine places a request naming its worker
		to = req.WorkerID
	}
	return engine.Sent{WorkerID: to, DpRank: req.DpRank, Expires: w.now.Add(2 * time.Second)}, true
}

func (w *world) PinContext(_ context.Context, resp *schemas.ResponseEvent) bool {
	w.pins = append(w.pins, resp)
	return true
}

func (w *world) DeviceBlocks(*schemas.RequestEvent, uint64, uint32) int {
	if w.loaded {
		return 4
	}
	return 0
}

func (w *world) PinTTL(string) time.Duration { return w.pinTTL }

func newTracker(t testing.TB, cfg Config) (*Tracker, *world, *metrics.Agent) {
	t.Helper()
	w := &world{now: time.UnixMilli(1_777_000_000_000), worker: 7, loaded: true, pinTTL: 30 * time.Second}
	m := metrics.NewAgent(metrics.New())
	tr, err := New(cfg, w, m, nil, func() time.Time { return w.now })
	if err != nil {
		t.Fatal(err)
	}
	return tr, w, m
}

func agentReq(id, workflowType, program string, speculative bool) *schemas.RequestEvent {
	return &schemas.RequestEvent{RequestID: id, SessionID: "w/" + program, Model: "m", TokenIDs: []uint32{1, 2, 3, 4},
		NvExt: &schemas.NvExt{AgentContext: &schemas.AgentContext{WorkflowTypeID: workflowType, WorkflowID: "w", ProgramID: program},
			AgentHints: &schemas.AgentHints{SpeculativePrefill: speculative}}}
}

func toolRec(event, workflowType, program, call, class string, startMs int64, durMs float64) *agentevents.Record {
	r := &agentevents.Record{Schema: agentevents.SchemaV1, EventType: event, EventTimeUnixMs: uint64(startMs), EventSource: "harness",
		AgentContext: schemas.AgentContext{WorkflowTypeID: workflowType, WorkflowID: "w", ProgramID: program},
		Tool:         agentevents.Tool{ToolCallID: call, ToolClass: class, StartedAtUnixMs: uint64(startMs)}}
	if event != agentevents.ToolStart {
		r.Tool.DurationMs, r.Tool.HasDuration = durMs, true
	}
	return r
}

// turn is one agent turn: request, a plain response from worker, then a
// tool of class lasting dur (no tool_end when dur < 0).
func turn(tr *Tracker, w *world, n int, workflowType, program, class string, worker uint64, dur time.Duration) {
	ctx := context.Background()
	id := fmt.Sprintf("%s-%d", program, n)
	tr.ObserveRequest(agentReq(id, workflowType, program, false))
	w.now = w.now.Add(100 * time.Millisecond)
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: id, WorkerID: worker, OutputTokenIDs: []uint32{9, 9}})
	start := w.now
	tr.OnRecord(ctx, toolRec(agentevents.ToolStart, workflowType, program, id, class, start.UnixMilli(), 0))
	if dur < 0 {
		return
	}
	for step := 10 * time.Millisecond; w.now.Sub(start) < dur; {
		w.now = w.now.Add(step)
		tr.Tick()
	}
	tr.OnRecord(ctx, toolRec(agentevents.ToolEnd, workflowType, program, id, class, start.UnixMilli(), float64(dur.Milliseconds())))
	w.now = w.now.Add(200 * time.Millisecond)
}

// TestToolLifecycle: the pin at tool_start (the response was not a tool
// call), the prefetch of prompt plus response at tool_end to the routed
// worker, and the outcomes when the next turn comes: pin kept, prefetch
// used; then wrong_worker, not_loaded, expired, and a pin lapsed by a
// tool_end that never came.
func TestToolLifecycle(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Predict, cfg.Feedback = false, false
	tr, w, m := newTracker(t, cfg)
	turn(tr, w, 1, "research", "p1", "web_search", 7, 3*time.Second)
	if len(w.pins) != 1 || w.pins[0].RequestID != "p1-1" || w.pins[0].ToolCalls[0].Name != "web_search" || len(w.pins[0].OutputTokenIDs) != 2 {
		t.Fatalf("pins %+v", w.pins)
	}
	if len(w.prefetch) != 1 || len(w.prefetch[0].TokenIDs) != 6 || w.prefetch[0].SessionID != "w/p1" {
		t.Fatalf("prefetches %+v", w.prefetch)
	}
	turn(tr, w, 2, "research", "p1", "web_search", 7, 3*time.Second) // prefetch used, pin kept
	turn(tr, w, 3, "research", "p1", "web_search", 7, 3*time.Second) // served by 8: wrong worker
	tr.ObserveRequest(agentReq("p1-4", "research", "p1", false))
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "p1-4", WorkerID: 8})
	// not loaded: the index never showed the blocks on 7.
	tr.OnRecord(context.Background(), toolRec(agentevents.ToolStart, "research", "p1", "c5", "web_search", w.now.UnixMilli(), 0))
	tr.OnRecord(context.Background(), toolRec(agentevents.ToolEnd, "research", "p1", "c5", "web_search", w.now.UnixMilli(), 10))
	w.loaded = false
	tr.ObserveRequest(agentReq("p1-5", "research", "p1", false))
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "p1-5", WorkerID: 7})
	w.loaded = true
	// Expired: the tool ends, no turn for longer than the prefetch lives.
	tr.OnRecord(context.Background(), toolRec(agentevents.ToolStart, "research", "p1", "c6", "web_search", w.now.UnixMilli(), 0))
	tr.OnRecord(context.Background(), toolRec(agentevents.ToolEnd, "research", "p1", "c6", "web_search", w.now.UnixMilli(), 10))
	w.now = w.now.Add(3 * time.Second)
	tr.Tick()
	// A tool_end that never comes: the pin of p2 lapses.
	turn(tr, w, 1, "research", "p2", "bash", 7, -1)
	w.now = w.now.Add(31 * time.Second)
	tr.Tick()
	got := m.OutcomeValues()
	want := map[string]uint64{"prefetch/used": 2, "prefetch/wrong_worker": 1, "prefetch/not_loaded": 1, "prefetch/expired": 1,
		"pin/kept": 4, "pin/lapsed": 2}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if m.TokensSaved.Value() == 0 {
		t.Error("no prefill tokens saved counted")
	}
	// p1's and p2's pins lapse on the same tick, in either order.
	rec := tr.Recent()
	if len(rec) != 11 || !slices.ContainsFunc(rec[:2], func(r Record) bool {
		return r.Hint == "pin" && r.Outcome == OutcomeLapsed && r.Session == "w/p2"
	}) {
		t.Errorf("recent %+v", rec)
	}
}

// TestSpeculativePrefill: a turn asking for speculative prefill gets its
// context prefetched when its response ends, before any tool event.
func TestSpeculativePrefill(t *testing.T) {
	tr, w, m := newTracker(t, DefaultConfig())
	tr.ObserveRequest(agentReq("s-1", "chat", "p", true))
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "s-1", WorkerID: 7, OutputTokenIDs: []uint32{5}})
	if len(w.prefetch) != 1 || len(w.prefetch[0].TokenIDs) != 5 || m.Hints.Value(KindSpeculativePrefetch) != 1 {
		t.Fatalf("prefetches %+v", w.prefetch)
	}
	tr.ObserveRequest(agentReq("s-2", "chat", "p", false))
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "s-2", WorkerID: 7})
	if m.OutcomeValues()["prefetch/used"] != 1 {
		t.Errorf("outcomes %v", m.OutcomeValues())
	}
}

// TestPredictedPrefetch: once a tool class has MinSamples durations, the
// prefetch leaves at start + predicted - load time, ahead of tool_end;
// tool_end then sends none, and a tool that ends before the prediction
// gets its prefetch at once, counted late.
func TestPredictedPrefetch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Feedback = false
	tr, w, m := newTracker(t, cfg)
	for i := range cfg.MinSamples {
		turn(tr, w, i, "r", "p", "search", 7, 2*time.Second)
	}
	if m.Hints.Value(KindPredictedPrefetch) != 0 {
		t.Fatal("predicted before MinSamples durations")
	}
	before := len(w.prefetch)
	turn(tr, w, 100, "r", "p", "search", 7, 2500*time.Millisecond)
	if m.Hints.Value(KindPredictedPrefetch) != 1 || len(w.prefetch) != before+1 || m.Timing.Value(TimingOnTime) != 1 {
		t.Fatalf("predicted %d, prefetches %d (+%d), timing %v", m.Hints.Value(KindPredictedPrefetch),
			len(w.prefetch), len(w.prefetch)-before, m.Timing.Values())
	}
	turn(tr, w, 101, "r", "p", "search", 7, 500*time.Millisecond) // ends before the prediction
	if m.Timing.Value(TimingLate) != 1 || m.Hints.Value(KindToolEndPrefetch) != uint64(cfg.MinSamples)+1 {
		t.Fatalf("timing %v, tool_end prefetches %d", m.Timing.Values(), m.Hints.Value(KindToolEndPrefetch))
	}
	// Runs long: the prefetch expired first, and tool_end sends another,
	// to the worker the predicted one went to (7), though the engine
	// would now pick 8.
	ctx := context.Background()
	tr.ObserveRequest(agentReq("p-102", "r", "p", false))
	w.now = w.now.Add(100 * time.Millisecond)
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "p-102", WorkerID: 7, OutputTokenIDs: []uint32{9, 9}})
	start := w.now
	tr.OnRecord(ctx, toolRec(agentevents.ToolStart, "r", "p", "p-102", "search", start.UnixMilli(), 0))
	for w.now.Sub(start) < 9*time.Second {
		w.now = w.now.Add(10 * time.Millisecond)
		tr.Tick()
	}
	fired := len(w.prefetch)
	if m.Hints.Value(KindPredictedPrefetch) != 2 || w.prefetch[fired-1].WorkerID != 0 {
		t.Fatalf("predicted %d, last prefetch %+v", m.Hints.Value(KindPredictedPrefetch), w.prefetch[fired-1])
	}
	w.worker = 8
	tr.OnRecord(ctx, toolRec(agentevents.ToolEnd, "r", "p", "p-102", "search", start.UnixMilli(), 9000))
	if m.Timing.Value(TimingEarly) != 1 || len(w.prefetch) != fired+1 || w.prefetch[fired].WorkerID != 7 {
		t.Fatalf("timing %v, prefetches %d (want %d), tool_end's to worker %d (want 7)", m.Timing.Values(),
			len(w.prefetch), fired+1, w.prefetch[len(w.prefetch)-1].WorkerID)
	}
	// The predicted one's worker left before the tool ended: the tool_end
	// prefetch goes to the worker the engine picks instead.
	tr.ObserveRequest(agentReq("p-105", "r", "p", false))
	w.now = w.now.Add(100 * time.Millisecond)
	w.worker = 9
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "p-105", WorkerID: 9, OutputTokenIDs: []uint32{9, 9}})
	start = w.now
	tr.OnRecord(ctx, toolRec(agentevents.ToolStart, "r", "p", "p-105", "search", start.UnixMilli(), 0))
	for w.now.Sub(start) < 9*time.Second {
		w.now = w.now.Add(10 * time.Millisecond)
		tr.Tick()
	}
	w.gone, w.worker = 9, 8
	sentBefore := len(w.prefetch)
	tr.OnRecord(ctx, toolRec(agentevents.ToolEnd, "r", "p", "p-105", "search", start.UnixMilli(), 9000))
	if len(w.prefetch) != sentBefore+2 || w.prefetch[sentBefore].WorkerID != 9 || w.prefetch[sentBefore+1].WorkerID != 0 {
		t.Fatalf("after the worker left: %d tries (want 2: to 9, then to any)", len(w.prefetch)-sentBefore)
	}
	w.gone = 0
	// A class never seen is predicted from every tool's times (AnyTool):
	// its first call gets a predicted prefetch.
	predicted := m.Hints.Value(KindPredictedPrefetch)
	turn(tr, w, 104, "r", "p", "grep", 8, 3*time.Second)
	if m.Hints.Value(KindPredictedPrefetch) != predicted+1 {
		t.Fatalf("a new class's first call: predicted %d, want %d", m.Hints.Value(KindPredictedPrefetch), predicted+1)
	}
	// A tool_end with no prediction fired leaves the choice to the engine.
	turn(tr, w, 103, "r", "p", "search", 8, 100*time.Millisecond)
	if last := w.prefetch[len(w.prefetch)-1]; last.WorkerID != 0 {
		t.Fatalf("a late call's tool_end prefetch names worker %d", last.WorkerID)
	}
}

// TestToolEndNamesTheAnsweringWorker: with affinity records on, a
// tool_end prefetch with no prediction fired before it goes to the worker
// that answered the call (it holds the context), though the engine would
// pick another; with them off, the engine picks.
func TestToolEndNamesTheAnsweringWorker(t *testing.T) {
	for _, aff := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.Predict, cfg.Feedback, cfg.Affinity = false, false, aff
		tr, w, _ := newTracker(t, cfg)
		w.worker = 8 // the engine's choice
		turn(tr, w, 1, "r", "p", "bash", 7, time.Second)
		last := w.prefetch[len(w.prefetch)-1]
		want := uint64(0)
		if aff {
			want = 7
		}
		if last.WorkerID != want {
			t.Fatalf("affinity %v: the tool_end prefetch names worker %d, want %d", aff, last.WorkerID, want)
		}
	}
}

// TestBoundedPrograms: however many programs, at most MaxPrograms are
// followed; a forgotten one's pin is settled as released.
func TestBoundedPrograms(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPrograms, cfg.Recent = 50, 16
	tr, w, m := newTracker(t, cfg)
	for i := range 1000 {
		turn(tr, w, 0, "r", fmt.Sprintf("p%d", i), "bash", 7, -1)
	}
	if n := tr.Programs(); n != 50 {
		t.Errorf("%d programs followed, want 50", n)
	}
	if len(tr.Recent()) != 16 || m.OutcomeValues()["pin/released"] != 950 {
		t.Errorf("recent %d, released %d", len(tr.Recent()), m.OutcomeValues()["pin/released"])
	}
}

// TestFeedback measures the prefetches sent and used for two workflow
// types, one whose next turns always go elsewhere, with the feedback off
// and on: on, the unused type gets a quarter of its prefetches, the used
// type all of its.
func TestFeedback(t *testing.T) {
	run := func(feedback bool) (sentBad, sentGood, usedGood uint64) {
		cfg := DefaultConfig()
		cfg.Predict, cfg.Feedback = false, feedback
		tr, w, m := newTracker(t, cfg)
		for i := range 200 {
			before := len(w.prefetch)
			turn(tr, w, i, "flaky", "bad", "browse", 8, time.Second) // next turns served by 8, prefetches go to 7
			sentBad += uint64(len(w.prefetch) - before)
			before = len(w.prefetch)
			turn(tr, w, i, "steady", "good", "grep", 7, time.Second)
			sentGood += uint64(len(w.prefetch) - before)
		}
		return sentBad, sentGood, m.OutcomeValues()["prefetch/used"]
	}
	offBad, offGood, offUsed := run(false)
	onBad, onGood, onUsed := run(true)
	t.Logf("feedback off: unused type %d prefetches, used type %d (%d used); on: %d, %d (%d used)",
		offBad, offGood, offUsed, onBad, onGood, onUsed)
	if offBad != 200 || offGood != 200 {
		t.Fatalf("without feedback every tool end prefetches: %d, %d", offBad, offGood)
	}
	// The first FeedbackWindow prefetches measure; then one in FeedbackKeep is sent.
	if onBad > uint64(DefaultFeedbackWindow+(200-DefaultFeedbackWindow)/DefaultFeedbackKeep+2) || onGood != 200 || onUsed != offUsed {
		t.Fatalf("with feedback: unused type %d prefetches, used type %d, used %d (off: %d)", onBad, onGood, onUsed, offUsed)
	}
}

// TestResponseBeforeRequest: the responses consumer may see a response
// before the requests consumer sees its request; it is kept until then.
func TestResponseBeforeRequest(t *testing.T) {
	tr, w, m := newTracker(t, DefaultConfig())
	turn(tr, w, 1, "r", "p", "grep", 7, time.Second)
	tr.ObserveResponse(&schemas.ResponseEvent{RequestID: "p-2", WorkerID: 7})
	tr.ObserveRequest(agentReq("p-2", "r", "p", false))
	if got := m.OutcomeValues()["prefetch/used"]; got != 1 {
		t.Fatalf("used %d, want 1: %v", got, m.OutcomeValues())
	}
}
