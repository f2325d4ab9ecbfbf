package pins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// WorkerLookup finds a worker's record (the registry).
type WorkerLookup interface {
	Get(id uint64) (schemas.WorkerRecord, bool)
}

// RequestStore finds the request of a response: RequestIndex (shared by
// a group, over the stream) live, an in-memory map in a replay.
type RequestStore interface {
	Put(ctx context.Context, req *schemas.RequestEvent, e IndexEntry) error
	Entry(ctx context.Context, requestID string) (IndexEntry, error)
	Request(ctx context.Context, requestID string, e IndexEntry) (*schemas.RequestEvent, error)
}

// SlotStore keeps each session's live pin: PinSlots (a KV bucket) live,
// an in-memory map in a replay. Every write returns the slot's new
// revision, which grows per slot across every member sharing the store
// and orders the pin messages (actions.Pin.Revision); 0: unknown.
type SlotStore interface {
	Put(ctx context.Context, session string, r PinRecord) (uint64, error)
	// Take removes the session's pin and returns it with the revision of
	// its removal, unless it is the pin of keep (a request whose own
	// response, overtaking it, already pinned).
	Take(ctx context.Context, session, keep string) (PinRecord, uint64, bool, error)
	// Renew sets the expiry of the session's pin if its record is still
	// the pin of trigger, and reports whether it was, with the new
	// revision.
	Renew(ctx context.Context, session, trigger string, expiresAtMs int64) (uint64, bool, error)
}

// ErrNotYet means a tool-call response's request is not (yet) in the
// request store: another member may still be indexing it, so the
// response is to be tried again later (see Arrival.Unknown and
// Arrival.Delivered for when it no longer is).
var ErrNotYet = errors.New("pins: request not indexed yet; try the response again")

// Pinning derives tool-call pins. The decision engine (package engine)
// calls OnRequest for every request (index it; on a session's next turn,
// learn the tool time and release the slot) and OnResponse for every
// response (pin on a tool call).
type Pinning struct {
	Endpoint string // DYN_KVM_PIN_ENDPOINT
	Index    RequestStore
	Slots    SlotStore
	Learner  *tooltime.Learner
	TTL      actions.TTLConfig
	Workers  WorkerLookup
	Sender   actions.Sender
	// ReleaseOnNextTurn sends a TTL-0 pin for the session's slot when its
	// next request arrives: the new turn loads the pages itself.
	ReleaseOnNextTurn bool
	// RenewMax is how long a tool call's pin is kept by renewals (see
	// renew.go), counted from the response; 0: pins are never renewed.
	RenewMax time.Duration
	// RenewRate is the renewal budget of RunRenewals, renewals/s; 0:
	// DefaultPinRenewRate (see renew_async.go).
	RenewRate float64
	// MaxPinKeys and MaxPinBytes cap one pin's keys (see
	// actions.ObjectKeysCapped); 0: the actions defaults.
	MaxPinKeys, MaxPinBytes int
	Counters                *metrics.Families
	Log                     *slog.Logger
	Now                     func() time.Time
	// Observer, when set, hears each pin and renewal (observe.go).
	Observer Observer
	// Pages, when set, names a worker's blocks for a prompt known by its
	// sequence hashes (the block index); without it such a prompt gets no
	// pin (counted as no_pages).
	Pages PageLookup

	renew   renewals
	returns returnStats

	// RetainOnWorker also sends the serving worker a hintstream.retain of the
	// turn's tokens at each tool call (retain.go); with no Endpoint it
	// is all that is sent.
	RetainOnWorker bool
	// Tokens, when set, also keeps each tool call's tokens pinned in a
	// store that names pages by tokens and keeps no TTL of its own
	// (LMCache's controller, package lmcachepin): see tokenpins.go.
	Tokens TokenPins
	// Keys makes a pin's Mooncake object keys; nil: actions.ObjectKeysCapped.
	Keys KeysFunc
	// BudgetTokens bounds the tokens' pages this member keeps pinned at
	// once (budget.go); 0: no bound.
	BudgetTokens int64
	budget       pinBudget
}

// KeysFunc makes the Mooncake object keys of the pin of request
// requestID: whatever actions.ObjectKeysCapped(layout, prompt followed
// by output, ns, maxKeys, maxBytes) returns, keys, cut and error alike.
// It is the pins' one use of SHA-256 over every page of a prompt; a
// caller that plays the same requests through several Pinnings
// (whatif's rows) hands in one that makes each request's keys once for
// all of them. The keys returned are read, never written.
type KeysFunc func(requestID string, layout *schemas.ObjectLayout, prompt, output []uint32, ns actions.Namespace,
	maxKeys, maxBytes int) (keys []string, cut int, err error)

// Deps are what a Pinning needs besides its configuration: the pin
// endpoint, the request and slot stores (JetStream KV live, memory in a
// replay), the registry, the sender, and the clock (nil: time.Now).
type Deps struct {
	Endpoint string
	Pages    PageLookup
	Index    RequestStore
	Slots    SlotStore
	Workers  WorkerLookup
	Sender   actions.Sender
	Counters *metrics.Families
	Log      *slog.Logger
	Now      func() time.Time
	// Tokens: see Pinning.Tokens; nil: none.
	Tokens TokenPins
	// Keys: see Pinning.Keys; nil: actions.ObjectKeysCapped.
	Keys KeysFunc
}

// Config is a Pinning's policy (engine.Decisions.PinConfig maps run's and
// replay's decisions onto it).
type Config struct {
	TTL      actions.TTLConfig // zero: actions.DefaultTTLConfig()
	ToolTime tooltime.Config   // zero: tooltime.DefaultConfig()
	// ReleaseOnNextTurn: see Pinning.ReleaseOnNextTurn.
	ReleaseOnNextTurn bool
	// RenewMax: see Pinning.RenewMax; 0: pins are never renewed.
	RenewMax time.Duration
	// MaxPinKeys, MaxPinBytes: see Pinning; 0: the defaults.
	MaxPinKeys, MaxPinBytes int
	// RetainOnWorker: see Pinning.RetainOnWorker.
	RetainOnWorker bool
	// BudgetTokens: see Pinning.BudgetTokens; 0: no bound.
	BudgetTokens int64
}

// New returns a Pinning of cfg over deps.
func New(cfg Config, deps Deps) *Pinning {
	if cfg.TTL == (actions.TTLConfig{}) {
		cfg.TTL = actions.DefaultTTLConfig()
	}
	if cfg.ToolTime == (tooltime.Config{}) {
		cfg.ToolTime = tooltime.DefaultConfig()
	}
	return &Pinning{Endpoint: deps.Endpoint, Index: deps.Index, Slots: deps.Slots, Learner: tooltime.New(cfg.ToolTime),
		TTL: cfg.TTL, Workers: deps.Workers, Sender: deps.Sender, ReleaseOnNextTurn: cfg.ReleaseOnNextTurn,
		RenewMax: max(cfg.RenewMax, 0), MaxPinKeys: cfg.MaxPinKeys, MaxPinBytes: cfg.MaxPinBytes,
		RetainOnWorker: cfg.RetainOnWorker, BudgetTokens: max(cfg.BudgetTokens, 0), Counters: deps.Counters, Log: deps.Log, Now: deps.Now, Pages: deps.Pages, Tokens: deps.Tokens, Keys: deps.Keys}
}

func (p *Pinning) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// OnRequest indexes the request, at stream sequence seq and stream time
// at, and closes its session's previous pin. An error is transient: the
// caller hands the request back.
func (p *Pinning) OnRequest(ctx context.Context, seq uint64, at time.Time, req *schemas.RequestEvent) error {
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	e := IndexEntry{Seq: seq}
	if v, ok := schemas.LookupHeader(req.Headers, schemas.HeaderSimToolCall); ok {
		e.SimToolMs = 1 // announced, time unknown
		if ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && ms > 0 {
			e.SimToolMs = min(ms, maxToolMs)
		} else if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(strings.TrimSpace(v), "-") {
			e.SimToolMs = maxToolMs // beyond int64: as long as a pin can be
		}
	}
	if err := p.Index.Put(ctx, req, e); isBucketFull(err) {
		// Not retried: it would stay full. Its response goes unpinned.
		p.Counters.PinsRequestIndexFull.Inc()
	} else if err != nil {
		return err
	}
	if req.SessionID == "" {
		return nil
	}
	rec, rev, ok, err := p.Slots.Take(ctx, req.SessionID, req.RequestID)
	if err != nil || !ok {
		return err
	}
	p.returns.observe(p.Learner, rec.Tools, true)
	p.unbudget(req.SessionID)
	if p.Tokens != nil {
		// The tool returned: the next turn loads the pages itself.
		p.Tokens.Release(ctx, rec.Slot, rec.Trigger)
	}
	if req.ReceivedAtMs > 0 {
		at = time.UnixMilli(req.ReceivedAtMs)
	}
	gap := at.Sub(time.UnixMilli(rec.CompletedAtMs))
	tools := rec.Tools
	if len(tools) == 0 {
		tools = []string{""}
	}
	for _, tool := range tools {
		if !p.Learner.Observe(tool, gap) {
			p.Counters.ToolDiscarded.Inc()
			continue
		}
		// Exposed per tracked tool (a bounded set, see Learner.Label): what
		// the next pin for it would expect.
		label := p.Learner.Label(tool)
		if label != tooltime.Other {
			d, _ := p.Learner.Expected([]string{tool})
			p.Counters.ToolExpected.Set(label, float64(d.Milliseconds())/1000)
		}
		p.Counters.ToolObserved.Inc(label)
	}
	if p.ReleaseOnNextTurn && p.Endpoint != "" && p.now().Before(time.UnixMilli(rec.ExpiresAtMs)) {
		p.send(actions.Pin{Trigger: rec.Trigger, Slot: rec.Slot, Revision: rev}, "release", time.Second, nil)
	}
	return nil
}

// Arrival is what OnResponse knows of how its response arrived.
type Arrival struct {
	// Time is the response's stream timestamp, used when it carries no
	// completed_at_ms. Unknown says the transport could not tell it (nor
	// the delivery count): the response is then never waited on.
	Time    time.Time
	Unknown bool
	// Delivered counts deliveries, this one included: a response whose
	// request is missing is tried again until its fifth.
	Delivered uint64
	// Working, when set, is called before a slow store read, so that the
	// transport keeps the response ours.
	Working func()
	// Done, when set, is called once a queued pin has left (true) or was
	// dropped (false).
	Done func(sent bool)
	// Quiet keeps the pin from Pinning.Observer: its caller follows what
	// becomes of it itself.
	Quiet bool
}

func (a Arrival) eventTime(ms int64) time.Time {
	if a.Unknown {
		return eventTime(time.Time{}, ms)
	}
	return eventTime(a.Time, ms)
}

// OnResponse pins the conversation's pages if the response ends in a tool
// call (or its request announced one). It reports whether a pin was
// queued: a.Done is then called once the pin has left or was dropped. An
// error matching ErrNotYet asks for the response again later; OnResponse
// returns no other.
func (p *Pinning) OnResponse(ctx context.Context, resp *schemas.ResponseEvent, a Arrival) (queued bool, err error) {
	p.Tick(ctx, a.eventTime(resp.CompletedAtMs))
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	toolCall := resp.FinishReason == "tool_calls" || len(resp.ToolCalls) > 0
	byHashes := len(resp.SequenceHashes) > 0
	e, err := p.Index.Entry(ctx, resp.RequestID)
	switch {
	case errors.Is(err, ErrRequestNotFound) && !toolCall:
		p.Counters.ResponsesNoPin.Inc()
		return false, nil // nothing announced a tool call; nothing to wait for
	case errors.Is(err, ErrRequestNotFound) && byHashes:
		// The response names its prompt itself: no request to wait for.
		e = IndexEntry{}
	case err != nil:
		return false, p.retryOrSkip(a, resp, err)
	}
	if !toolCall && e.SimToolMs == 0 {
		p.Counters.ResponsesNoPin.Inc()
		return false, nil
	}
	if byHashes {
		return p.pinByHashes(ctx, resp, e, a)
	}
	// Reading the request back is a stream round trip: tell the transport
	// the response is being worked on.
	if a.Working != nil {
		a.Working()
	}
	req, err := p.Index.Request(ctx, resp.RequestID, e)
	if err != nil {
		return false, p.retryOrSkip(a, resp, err)
	}
	w, ok := p.Workers.Get(resp.WorkerID)
	if !ok {
		p.skip("unknown_worker", resp)
		return false, nil
	}
	// The prompt and output joined, for what reads them as one: half a
	// megabyte to copy at an agentic turn, so not for a KeysFunc, which
	// takes them apart.
	var tokens []uint32
	if p.RetainOnWorker || p.Tokens != nil || p.Keys == nil {
		tokens = append(append(make([]uint32, 0, len(req.TokenIDs)+len(resp.OutputTokenIDs)), req.TokenIDs...), resp.OutputTokenIDs...)
	}
	p.retainOnWorker(req, resp, w, tokens, e.SimToolMs)
	p.holdTokens(ctx, req, resp, tokens, e.SimToolMs, a) // tokenpins.go
	if p.Endpoint == "" {                                // no Mooncake master to pin in
		return false, nil
	}
	if req.LoraName != "" {
		// SGLang's extra_key then ends in the adapter's lora_id, an id
		// SGLang makes when it loads the adapter: keys named without it
		// would name objects that do not exist.
		p.skip("unknown_namespace", resp)
		return false, nil
	}
	ns := actions.Namespace{ExtraKey: req.ExtraKey, CacheSalt: req.CacheSalt}
	var keys []string
	var cut int
	if p.Keys != nil {
		keys, cut, err = p.Keys(resp.RequestID, w.ObjectLayout, req.TokenIDs, resp.OutputTokenIDs, ns, p.MaxPinKeys, p.MaxPinBytes)
	} else {
		keys, cut, err = actions.ObjectKeysCapped(w.ObjectLayout, tokens, ns, p.MaxPinKeys, p.MaxPinBytes)
	}
	n := len(req.TokenIDs) + len(resp.OutputTokenIDs)
	switch {
	case errors.Is(err, actions.ErrNoLayout):
		p.skip("no_layout", resp)
		return false, nil
	case errors.Is(err, actions.ErrPinOverCap):
		p.skip("over_cap", resp)
		p.Log.Warn("no pin: one page of the worker's layout exceeds the pin cap", "worker_id", resp.WorkerID, "err", err)
		return false, nil
	case err == nil && cut > 0:
		p.Counters.PinsCut.Inc()
		n = n/int(w.ObjectLayout.PageSize)*int(w.ObjectLayout.PageSize) - cut*int(w.ObjectLayout.PageSize)
	}
	if err != nil || len(keys) == 0 {
		p.skip("no_full_page", resp)
		return false, nil
	}
	pageTokens := n / int(w.ObjectLayout.PageSize) * int(w.ObjectLayout.PageSize)
	return p.pin(ctx, resp, req, e, a, actions.Pin{Keys: keys, Tokens: pageTokens})
}

// pin completes pin (its pages and Tokens set) with the slot, TTL and
// priority of resp's tool call, records the slot and sends it; req is the
// request read back, or nil.
func (p *Pinning) pin(ctx context.Context, resp *schemas.ResponseEvent, req *schemas.RequestEvent, e IndexEntry,
	a Arrival, pin actions.Pin) (queued bool, err error) {
	tools, ttl := p.toolTTL(resp, e.SimToolMs)
	pageTokens := pin.Tokens
	if req == nil {
		req = &schemas.RequestEvent{}
	}
	session, slot := slotOf(req, resp)
	pin.Trigger, pin.Slot, pin.TTL = resp.RequestID, slot, ttl
	pin.Priority = agentPriority(actions.Priority(pageTokens), req, resp)
	if session == "" {
		return p.send(pin, "pin", p.TTL.Deadline(ttl), a.Done), nil
	}
	// The record is written first: its revision orders this pin after
	// the release of the session's previous one, whichever member sends
	// which and whatever order they reach the master in.
	completed := a.eventTime(resp.CompletedAtMs)
	rec := PinRecord{Slot: slot, Trigger: resp.RequestID, Tools: tools, CompletedAtMs: completed.UnixMilli(),
		ExpiresAtMs: p.now().Add(ttl).UnixMilli()}
	rev, err := p.putSlot(ctx, session, rec)
	if err != nil {
		if isBucketFull(err) {
			p.Counters.PinsSlotsFull.Inc()
		}
		p.Log.Warn("pin slot not recorded", "session", session, "err", err)
	}
	pin.Revision = rev
	queued = p.send(pin, "pin", p.TTL.Deadline(ttl), a.Done)
	if queued && p.Observer != nil && !a.Quiet {
		p.Observer.Pinned(session, resp.WorkerID, resp.DpRank, pageTokens, p.now().Add(ttl))
	}
	if err == nil && queued {
		x, now := p.schedule(session, pin, tools, completed, ttl, rev)
		p.budgeted(ctx, &budgetPin{session: session, slot: slot, trigger: pin.Trigger, tokens: int64(pageTokens),
			tools: tools, completed: completed, expires: now.Add(ttl), renewal: x}, now)
	}
	return queued, nil
}

// toolTTL is the tools a response called and the TTL its pin gets: the
// tool time its request announced, else the learned one, plus headroom.
func (p *Pinning) toolTTL(resp *schemas.ResponseEvent, simToolMs int64) ([]string, time.Duration) {
	tools := make([]string, 0, len(resp.ToolCalls))
	for _, tc := range resp.ToolCalls {
		tools = append(tools, tc.Name)
	}
	expected := toolDuration(simToolMs)
	if simToolMs <= 1 {
		var src tooltime.Source
		expected, src = p.Learner.Expected(tools)
		p.Counters.PinsExpectedFrom.Inc(src.String())
	}
	return tools, p.TTL.TTL(expected)
}

// slotOf is a tool call's session and the slot its pin takes: one per
// session, or per request without one.
func slotOf(req *schemas.RequestEvent, resp *schemas.ResponseEvent) (session, slot string) {
	session = req.SessionID
	if session == "" {
		session = resp.SessionID
	}
	if session != "" {
		return session, "session:" + session
	}
	return "", "request:" + resp.RequestID
}

// maxToolMs is the longest tool time an event may announce: a pin never
// lasts longer, and beyond it the ms-to-Duration product would wrap.
var maxToolMs = actions.MaxPinTTL.Milliseconds()

// toolDuration is ms milliseconds, saturating at actions.MaxPinTTL (an
// index entry written by another version may hold any int64).
func toolDuration(ms int64) time.Duration {
	return time.Duration(min(max(ms, 0), maxToolMs)) * time.Millisecond
}

// retryOrSkip waits for a request another member may still be indexing,
// a few times (ErrNotYet), then gives up on the pin (never on the
// response: nil).
func (p *Pinning) retryOrSkip(a Arrival, resp *schemas.ResponseEvent, err error) error {
	if !a.Unknown && a.Delivered < 5 {
		p.Counters.ResponsesRetried.Inc()
		return fmt.Errorf("%w: %w", ErrNotYet, err)
	}
	p.skip("request_not_found", resp)
	p.Log.Debug("no request for tool-call response", "request_id", resp.RequestID, "err", err)
	return nil
}

func (p *Pinning) skip(reason string, resp *schemas.ResponseEvent) {
	p.Counters.HintsPinSkipped.Inc(reason)
	p.Log.Debug("no pin", "request_id", resp.RequestID, "reason", reason)
}

func (p *Pinning) send(pin actions.Pin, what string, deadline time.Duration, settled func(bool)) bool {
	env, err := actions.NewPinEnvelope(pin)
	var body []byte
	if err == nil {
		body, err = actions.EncodeEnvelope(env)
	}
	if err != nil {
		p.Counters.HintsPinSkipped.Inc("encode")
		p.Log.Error("encode pin", "trigger", pin.Trigger, "err", err)
		return false
	}
	if err := p.Sender.Send(p.Endpoint, actions.Hint{MessageID: env.MessageID, Body: body,
		Deadline: p.now().Add(deadline), Done: settled}); err != nil {
		_, dropped := p.Counters.Hint(what)
		dropped.Inc(actions.DropReason(err))
		p.Log.Warn(what+" not queued", "trigger", pin.Trigger, "err", err)
		return false
	}
	queued, _ := p.Counters.Hint(what)
	queued.Inc()
	p.Log.Debug(what+" queued", "trigger", pin.Trigger, "slot", pin.Slot, "keys", len(pin.Keys),
		"ttl", pin.TTL, "priority", pin.Priority)
	return true
}
