package agents

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// Hinter sends the hints: the decision engine (*engine.Engine).
type Hinter interface {
	PrefetchContext(req *schemas.RequestEvent) (engine.Sent, bool)
	PinContext(ctx context.Context, resp *schemas.ResponseEvent) bool
	DeviceBlocks(req *schemas.RequestEvent, worker uint64, dpRank uint32) int
	PinTTL(tool string) time.Duration
}

// Hint kinds (metrics.AgentHintKinds) and outcomes (metrics.HintOutcomes).
const (
	KindToolStartPin        = "tool_start_pin"
	KindToolEndPrefetch     = "tool_end_prefetch"
	KindPredictedPrefetch   = "predicted_prefetch"
	KindSpeculativePrefetch = "speculative_prefetch"

	OutcomeUsed        = "used"
	OutcomeWrongWorker = "wrong_worker"
	OutcomeExpired     = "expired"
	OutcomeNotLoaded   = "not_loaded"
	OutcomeKept        = "kept"
	OutcomeLapsed      = "lapsed"
	OutcomeReleased    = "released"

	TimingEarly  = "early"
	TimingOnTime = "on_time"
	TimingLate   = "late"
)

// Record is one hint and its fate, as `hintstream inspect outcomes`
// lists it.
type Record struct {
	ID           uint64    `json:"id"`
	Hint         string    `json:"hint"` // prefetch or pin
	Kind         string    `json:"kind"`
	Session      string    `json:"session"`
	WorkflowType string    `json:"workflow_type,omitempty"`
	ToolClass    string    `json:"tool_class,omitempty"`
	WorkerID     uint64    `json:"worker_id"`
	DpRank       uint32    `json:"dp_rank"`
	Tokens       int       `json:"tokens"`
	SentAt       time.Time `json:"sent_at"`
	Expires      time.Time `json:"expires"`
	Timing       string    `json:"timing,omitempty"` // a predicted prefetch's
	Outcome      string    `json:"outcome,omitempty"`
	DecidedAt    time.Time `json:"decided_at,omitzero"`
}

type pending struct {
	rec       Record
	turnAt    time.Time // the next request's arrival; zero until it came
	loaded    bool      // the index showed the prompt on the worker then
	prefetchQ *schemas.RequestEvent
}

type predicted struct {
	toolCallID, toolClass string
	fireAt                time.Time
	fired                 bool
	firedAt, expires      time.Time
	tokens                int
	sentTo                engine.Sent // where the fired prefetch went
}

type program struct {
	key, workflowType, session  string
	model, lora, salt, reqID    string
	prompt, output              []uint32
	workerID                    uint64
	dpRank                      uint32
	haveResp, pinned, speculate bool
	prefetch, pin               *pending
	pred                        *predicted
	elem                        *list.Element
}

// Tracker follows agent programs; see the package doc. Safe for
// concurrent use; Run owns its clock ticks.
type Tracker struct {
	cfg     Config
	h       Hinter
	m       *metrics.Agent
	log     *slog.Logger
	now     func() time.Time
	learner *tooltime.Learner

	mu       sync.Mutex
	programs map[string]*program
	lru      *list.List // front: most recently seen
	byReq    map[string]*program
	// early holds responses that came before their request (the two
	// streams are consumed apart), until it comes; bounded by maxEarly.
	early    map[string]*schemas.ResponseEvent
	recent   []Record
	next     int
	ids      uint64
	feedback *feedback
	// The engine's own hints (sessions.go), bounded by MaxPrograms.
	sessions  map[string]*session
	slru      *list.List
	sessByReq map[string]*session
	// store shares programs' turns with the group (shared.go); nil: none.
	store   ContextStore
	evicted Evictions
}

// Evictions count what the bounded tables forgot to stay in bounds.
type Evictions struct {
	Programs uint64 // least recently seen programs past MaxPrograms
	Sessions uint64 // sessions with engine hints pending, past MaxPrograms
	Early    uint64 // responses waiting for their request, past maxEarly
}

// Evicted returns the evictions so far.
func (t *Tracker) Evicted() Evictions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evicted
}

// New returns a Tracker of cfg (DefaultConfig for zero fields is the
// caller's: cfg is validated as given) sending through h, counting on m.
// now nil is time.Now.
func New(cfg Config, h Hinter, m *metrics.Agent, log *slog.Logger, now func() time.Time) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil || m == nil {
		return nil, fmt.Errorf("%w: no hinter or no metrics", ErrInvalidOption)
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{cfg: cfg, h: h, m: m, log: log, now: now,
		learner:  tooltime.New(tooltime.Config{Percentile: cfg.PredictPercentile, MinSamples: cfg.MinSamples}),
		programs: map[string]*program{}, lru: list.New(), byReq: map[string]*program{},
		early:    map[string]*schemas.ResponseEvent{},
		feedback: newFeedback(cfg.FeedbackWindow),
		sessions: map[string]*session{}, slru: list.New(), sessByReq: map[string]*session{}}, nil
}

// Learner is the tool durations learned from tool_end records.
func (t *Tracker) Learner() *tooltime.Learner { return t.learner }

// Programs is how many programs are followed.
func (t *Tracker) Programs() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.programs)
}

// Recent returns the last hints and their fate, newest first.
func (t *Tracker) Recent() []Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Record, 0, len(t.recent))
	for i := range len(t.recent) {
		j := (t.next - 1 - i + 2*len(t.recent)) % len(t.recent)
		out = append(out, t.recent[j])
	}
	return out
}

// Run ticks the clock (predicted prefetches, expiries) every interval
// until ctx ends; 0 is 50 ms.
func (t *Tracker) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			t.Tick()
		}
	}
}

// program returns (and touches) the program of key, creating it; the
// least recently seen is forgotten past MaxPrograms. Under t.mu.
func (t *Tracker) program(key, workflowType string) *program {
	if p := t.programs[key]; p != nil {
		t.lru.MoveToFront(p.elem)
		if workflowType != "" {
			p.workflowType = workflowType
		}
		return p
	}
	if len(t.programs) >= t.cfg.MaxPrograms {
		old := t.lru.Back().Value.(*program)
		t.forget(old)
		t.evicted.Programs++
	}
	p := &program{key: key, workflowType: workflowType}
	p.elem = t.lru.PushFront(p)
	t.programs[key] = p
	return p
}

// forget drops p; its hints still pending are decided as far as they can
// be: a pin that was not followed by a turn is released unseen.
func (t *Tracker) forget(p *program) {
	if p.pin != nil {
		t.decide(p.pin, OutcomeReleased)
	}
	if p.prefetch != nil {
		t.decide(p.prefetch, OutcomeExpired)
	}
	delete(t.programs, p.key)
	if t.byReq[p.reqID] == p {
		delete(t.byReq, p.reqID)
	}
	t.lru.Remove(p.elem)
}

// ObserveRequest follows a request of an agent (nvext.agent_context);
// others are ignored. The request is not kept: its tokens are copied.
func (t *Tracker) ObserveRequest(req *schemas.RequestEvent) {
	c := req.NvExt.Context()
	if c == nil {
		return
	}
	now := t.now()
	defer t.shareRequest(req, c) // after the unlock below
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.program(schemas.AgentSession(c), c.WorkflowTypeID)
	if p.reqID == req.RequestID {
		return // a redelivery
	}
	// The next turn: what the last hints did for it.
	if pf := p.prefetch; pf != nil && pf.turnAt.IsZero() {
		if now.After(pf.rec.Expires) {
			t.decide(pf, OutcomeExpired)
			p.prefetch = nil
		} else {
			pf.turnAt = now
			pf.loaded = t.h.DeviceBlocks(pf.prefetchQ, pf.rec.WorkerID, pf.rec.DpRank) > 0
		}
	}
	if pn := p.pin; pn != nil {
		if now.After(pn.rec.Expires) {
			t.decide(pn, OutcomeLapsed)
		} else {
			t.decide(pn, OutcomeKept)
			t.m.TokensSaved.Add(uint64(pn.rec.Tokens))
		}
		p.pin = nil
	}
	p.pred = nil // the next turn came first
	if p.reqID != "" && t.byReq[p.reqID] == p {
		delete(t.byReq, p.reqID)
	}
	p.session, p.model, p.lora, p.salt, p.reqID = req.SessionID, req.Model, req.LoraName, req.CacheSalt, req.RequestID
	p.prompt = append(p.prompt[:0], req.TokenIDs...)
	p.output = p.output[:0]
	p.haveResp, p.pinned = false, false
	p.speculate = req.NvExt.Hints().SpeculativePrefill
	t.byReq[req.RequestID] = p
	if resp := t.early[req.RequestID]; resp != nil {
		delete(t.early, req.RequestID)
		t.observeResponse(resp, p)
	}
}

// maxEarly bounds the responses kept for a request not seen yet; past
// it the table starts again (such a response then goes unobserved).
const maxEarly = 1024

// ObserveResponse follows the response of a followed request: its worker
// decides the last prefetch's outcome, its output completes the context,
// and a speculative_prefill turn prefetches that context at once.
func (t *Tracker) ObserveResponse(resp *schemas.ResponseEvent) {
	var program string
	if c := resp.NvExt.Context(); c != nil {
		program = schemas.AgentSession(c)
	}
	defer func() { t.shareResponse(resp, program) }() // after the unlock below
	t.mu.Lock()
	defer t.mu.Unlock()
	t.served(resp)
	p := t.byReq[resp.RequestID]
	if p != nil {
		program = p.key
	}
	if p == nil {
		if program != "" {
			p = t.programs[program]
		}
		if p == nil || p.reqID != resp.RequestID {
			if len(t.early) >= maxEarly {
				t.evicted.Early += uint64(len(t.early))
				clear(t.early)
			}
			t.early[resp.RequestID] = resp
			return
		}
	}
	t.observeResponse(resp, p)
}

// observeResponse is ObserveResponse once p is known. Under t.mu.
func (t *Tracker) observeResponse(resp *schemas.ResponseEvent, p *program) {
	t.lru.MoveToFront(p.elem)
	if pf := p.prefetch; pf != nil && !pf.turnAt.IsZero() {
		switch {
		case !pf.loaded:
			t.decide(pf, OutcomeNotLoaded)
		case resp.WorkerID == pf.rec.WorkerID && resp.DpRank == pf.rec.DpRank:
			t.decide(pf, OutcomeUsed)
			t.m.TokensSaved.Add(uint64(pf.rec.Tokens))
		default:
			t.decide(pf, OutcomeWrongWorker)
		}
		p.prefetch = nil
	}
	if p.haveResp {
		return // a redelivery
	}
	p.output = append(p.output[:0], resp.OutputTokenIDs...)
	p.workerID, p.dpRank, p.haveResp = resp.WorkerID, resp.DpRank, true
	// A tool-call response was pinned by the pins already (pins on).
	p.pinned = (resp.FinishReason == "tool_calls" || len(resp.ToolCalls) > 0) && t.h.PinTTL("") > 0
	if p.speculate {
		t.prefetch(p, KindSpeculativePrefetch, "", "", nil)
	}
}

// contextRequest is the program's context (prompt and response) as a
// request a router would route.
func (p *program) contextRequest(id string) *schemas.RequestEvent {
	tokens := make([]uint32, 0, len(p.prompt)+len(p.output))
	tokens = append(append(tokens, p.prompt...), p.output...)
	return &schemas.RequestEvent{RequestID: id, SessionID: p.session, Model: p.model, TokenIDs: tokens,
		LoraName: p.lora, CacheSalt: p.salt}
}

// prefetch sends the program's context (unless the feedback holds it
// back) and keeps it pending; to the worker on names, when set, else
// to the one the engine picks. Under t.mu.
func (t *Tracker) prefetch(p *program, kind, toolClass, callID string, on *engine.Sent) (engine.Sent, bool) {
	if !p.haveResp && len(p.prompt) == 0 {
		return engine.Sent{}, false
	}
	if t.cfg.Feedback {
		if scope, hold := t.feedback.hold(p.workflowType, toolClass, t.cfg); hold {
			t.m.Suppressed.Inc(scope)
			return engine.Sent{}, false
		}
	}
	id := "agent:" + kind + ":" + p.reqID
	if callID != "" {
		id += ":" + callID
	}
	req := p.contextRequest(id)
	if on != nil {
		req.WorkerID, req.DpRank = on.WorkerID, on.DpRank
	}
	sent, ok := t.h.PrefetchContext(req)
	if !ok && on != nil {
		// The named worker is gone (or no candidate): any worker beats none.
		req.WorkerID, req.DpRank = 0, 0
		sent, ok = t.h.PrefetchContext(req)
	}
	if !ok {
		return engine.Sent{}, false
	}
	t.m.Hints.Inc(kind)
	if p.prefetch != nil { // superseded before any turn: it was not used
		t.decide(p.prefetch, OutcomeExpired)
	}
	p.prefetch = &pending{prefetchQ: req, rec: Record{Hint: "prefetch", Kind: kind, Session: p.key,
		WorkflowType: p.workflowType, ToolClass: toolClass, WorkerID: sent.WorkerID, DpRank: sent.DpRank,
		Tokens: len(req.TokenIDs), SentAt: t.now(), Expires: sent.Expires}}
	return sent, true
}

// decide settles a pending hint: counted, kept in the recent ring, and
// (for a prefetch) fed back. Under t.mu.
func (t *Tracker) decide(pd *pending, outcome string) {
	t.ids++
	r := pd.rec
	r.ID, r.Outcome, r.DecidedAt = t.ids, outcome, t.now()
	t.m.Outcome(r.Hint, outcome)
	if r.Hint == "prefetch" && r.Kind != KindWakeupPrefetch {
		t.feedback.add(r.WorkflowType, r.ToolClass, outcome == OutcomeUsed)
	}
	if len(t.recent) < t.cfg.Recent {
		t.recent = append(t.recent, r)
		t.next = len(t.recent) % t.cfg.Recent
		return
	}
	t.recent[t.next] = r
	t.next = (t.next + 1) % t.cfg.Recent
}

// Apply decodes one stored tool record and acts on it; a malformed one
// is counted and its *schemas.DecodeError returned (the consumer
// dead-letters it).
func (t *Tracker) Apply(m engine.Message) error {
	rec, err := agentevents.Decode(m.Data, m.Header.Get("Content-Type"))
	if err != nil {
		t.m.Malformed.Inc(reasonOf(err))
		return err
	}
	t.OnRecord(context.Background(), rec)
	return nil
}

// eventTime is a record's time in ms, or now when it is absent, ahead of
// now or over an hour old (a clock a prediction cannot start from).
func (t *Tracker) eventTime(ms uint64) time.Time {
	now := t.now()
	if ms == 0 || ms > uint64(now.UnixMilli()) || now.UnixMilli()-int64(ms) > time.Hour.Milliseconds() {
		return now
	}
	return time.UnixMilli(int64(ms))
}

// OnRecord acts on one tool record (see the package doc).
func (t *Tracker) OnRecord(ctx context.Context, rec *agentevents.Record) {
	t.m.Events.Inc(rec.EventType)
	class := rec.Tool.ToolClass
	// In a group the event may be this member's while the program's turn
	// was another's: read it back.
	t.hydrate(ctx, rec.Session(), rec.AgentContext.WorkflowTypeID)
	switch rec.EventType {
	case agentevents.ToolStart:
		t.toolStart(ctx, rec, class)
	default:
		t.toolEnd(rec, class)
	}
}

func (t *Tracker) toolStart(ctx context.Context, rec *agentevents.Record, class string) {
	t.mu.Lock()
	p := t.program(rec.Session(), rec.AgentContext.WorkflowTypeID)
	var pinResp *schemas.ResponseEvent
	if p.haveResp && !p.pinned {
		p.pinned = true // one pin per turn, even if this one fails
		pinResp = &schemas.ResponseEvent{RequestID: p.reqID, SessionID: p.session, Model: p.model,
			WorkerID: p.workerID, DpRank: p.dpRank, FinishReason: "tool_calls",
			ToolCalls: []schemas.ToolCall{{Name: class}}, OutputTokenIDs: append([]uint32(nil), p.output...)}
	}
	tokens := len(p.prompt) + len(p.output)
	if t.cfg.Predict && (p.haveResp || len(p.prompt) > 0) {
		// A class with too few times of its own is predicted from every
		// tool's (AnyTool), once those are enough: a new tool's first
		// calls get a lead too. Default and Provisional are guesses.
		if d, src := t.learner.Expected([]string{class}); src == tooltime.Learned || src == tooltime.AnyTool {
			start := t.eventTime(rec.Tool.StartedAtUnixMs)
			if rec.Tool.StartedAtUnixMs == 0 {
				start = t.eventTime(rec.EventTimeUnixMs)
			}
			p.pred = &predicted{toolCallID: rec.Tool.ToolCallID, toolClass: class, tokens: tokens,
				fireAt: start.Add(d - t.cfg.LoadTime(tokens))}
		}
	}
	t.mu.Unlock()
	if pinResp == nil {
		t.fireDue(p)
		return
	}
	// The pin reads the request index (a store round trip): not under mu.
	if !t.h.PinContext(ctx, pinResp) {
		t.fireDue(p)
		return
	}
	ttl := t.h.PinTTL(class)
	now := t.now()
	t.mu.Lock()
	t.m.Hints.Inc(KindToolStartPin)
	if t.programs[p.key] == p {
		if p.pin != nil {
			t.decide(p.pin, OutcomeReleased) // replaced by this one
		}
		p.pin = &pending{rec: Record{Hint: "pin", Kind: KindToolStartPin, Session: p.key, WorkflowType: p.workflowType,
			ToolClass: class, WorkerID: p.workerID, DpRank: p.dpRank, Tokens: tokens, SentAt: now, Expires: now.Add(ttl)}}
	}
	t.mu.Unlock()
	t.fireDue(p) // a prediction already due fires now
}

// fireDue fires p's predicted prefetch if it is due. A tool_start used to
// run all of Tick, a sweep of every program and session: at 4,096
// programs, a harness's burst of tool_starts cost O(programs) each; the
// sweep is Run's, on its clock.
func (t *Tracker) fireDue(p *program) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.programs[p.key] == p {
		t.fire(p, now)
	}
}

// fire fires p's prediction when due. Under t.mu.
func (t *Tracker) fire(p *program, now time.Time) {
	if pr := p.pred; pr != nil && !pr.fired && !now.Before(pr.fireAt) {
		pr.fired, pr.firedAt = true, now
		if sent, ok := t.prefetch(p, KindPredictedPrefetch, pr.toolClass, pr.toolCallID, nil); ok {
			pr.expires = sent.Expires
			pr.sentTo = sent
		} else {
			pr.expires = now
		}
	}
}

func (t *Tracker) toolEnd(rec *agentevents.Record, class string) {
	d := time.Duration(rec.Tool.DurationMs * float64(time.Millisecond))
	if !rec.Tool.HasDuration && rec.Tool.EndedAtUnixMs > rec.Tool.StartedAtUnixMs && rec.Tool.StartedAtUnixMs > 0 {
		d = time.Duration(rec.Tool.EndedAtUnixMs-rec.Tool.StartedAtUnixMs) * time.Millisecond
	}
	if d > 0 {
		t.learner.Observe(class, d)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.programs[rec.Session()]
	if p == nil {
		return
	}
	t.lru.MoveToFront(p.elem)
	end := t.now()
	// A predicted prefetch sent for this call (early or still loading):
	// the one sent now goes to its worker. The engine would weigh the
	// workers' load again and may pick another, and the turn, routed by
	// the affinity record the latest prefetch writes, would then leave
	// behind what the predicted one loaded.
	var on *engine.Sent
	if pr := p.pred; pr != nil && pr.toolCallID == rec.Tool.ToolCallID {
		p.pred = nil
		timing := TimingLate
		if pr.fired && pr.sentTo.WorkerID != 0 {
			on = &pr.sentTo
		}
		if pr.fired {
			loadedAt := pr.firedAt.Add(t.cfg.LoadTime(pr.tokens))
			switch {
			case loadedAt.After(end):
				timing = TimingLate
			case pr.expires.Before(end):
				timing = TimingEarly
			default:
				timing = TimingOnTime
			}
		}
		t.m.Timing.Inc(timing)
		if p.prefetch != nil && p.prefetch.rec.Kind == KindPredictedPrefetch {
			p.prefetch.rec.Timing = timing
		}
		if timing == TimingOnTime {
			return // the context is there, or on its way
		}
	}
	if on == nil && t.cfg.Affinity && p.haveResp && p.workerID != 0 {
		on = &engine.Sent{WorkerID: p.workerID, DpRank: p.dpRank}
	}
	t.prefetch(p, KindToolEndPrefetch, class, rec.Tool.ToolCallID, on)
}

// Tick fires predicted prefetches that are due and settles hints whose
// time ran out with no turn: a prefetch expired, a pin lapsed.
func (t *Tracker) Tick() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.programs {
		t.fire(p, now)
		if pf := p.prefetch; pf != nil && pf.turnAt.IsZero() && now.After(pf.rec.Expires) {
			t.decide(pf, OutcomeExpired)
			p.prefetch = nil
		}
		if pn := p.pin; pn != nil && now.After(pn.rec.Expires) {
			t.decide(pn, OutcomeLapsed)
			p.pin = nil
		}
	}
	t.tickSessions(now)
}

func reasonOf(err error) string {
	if de, ok := err.(*schemas.DecodeError); ok {
		return de.Reason
	}
	return "invalid"
}
