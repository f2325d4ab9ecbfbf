package consumers

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/hints"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/tooltime"
)

// HeaderSimToolCall on a request announces a tool call: its response is
// pinned even if it does not end in one, and a positive integer value is
// the expected tool time in ms.
const HeaderSimToolCall = "x-dynamo-experimental-sim-tool-call"

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
// an in-memory map in a replay.
type SlotStore interface {
	Put(ctx context.Context, session string, r PinRecord) error
	Take(ctx context.Context, session string) (PinRecord, bool, error)
	// Renew sets the expiry of the session's pin if its record is still
	// the pin of trigger, and reports whether it was.
	Renew(ctx context.Context, session, trigger string, expiresAtMs int64) (bool, error)
}

// Pinning derives tool-call pins. It is shared by the request consumer
// (index every request; on a session's next turn, learn the tool time and
// release the slot) and the response consumer (pin on a tool call).
type Pinning struct {
	Endpoint string // DYN_KVM_PIN_ENDPOINT
	Index    RequestStore
	Slots    SlotStore
	Learner  *tooltime.Learner
	TTL      actions.TTLConfig
	Workers  WorkerLookup
	Sender   HintSender
	// ReleaseOnNextTurn sends a TTL-0 pin for the session's slot when its
	// next request arrives: the new turn loads the pages itself.
	ReleaseOnNextTurn bool
	// RenewMax is how long a tool call's pin is kept by renewals (see
	// renew.go), counted from the response; 0: pins are never renewed.
	RenewMax time.Duration
	// RenewRate is the renewal budget of RunRenewals, renewals/s; 0:
	// DefaultPinRenewRate (see renew_async.go).
	RenewRate float64
	Counters  *metrics.Families
	Log       *slog.Logger
	Now       func() time.Time

	renew renewals
}

// PinDeps are what a Pinning needs besides its decisions: the pin
// endpoint, the request and slot stores (JetStream KV live, memory in a
// replay), the registry, the sender, and the clock (nil: time.Now).
type PinDeps struct {
	Endpoint string
	Index    RequestStore
	Slots    SlotStore
	Workers  WorkerLookup
	Sender   HintSender
	Counters *metrics.Families
	Log      *slog.Logger
	Now      func() time.Time
}

// NewPinning is the one constructor of run's and replay's pins: TTL, tool
// times, keep-pin and the renewal cap come from d (after its defaults).
func NewPinning(d hints.Decisions, deps PinDeps) *Pinning {
	d = d.WithDefaults()
	return &Pinning{Endpoint: deps.Endpoint, Index: deps.Index, Slots: deps.Slots, Learner: tooltime.New(d.ToolTime),
		TTL: d.PinTTL, Workers: deps.Workers, Sender: deps.Sender, ReleaseOnNextTurn: !d.KeepPinOnNextTurn,
		RenewMax: d.RenewMax(), Counters: deps.Counters, Log: deps.Log, Now: deps.Now}
}

func (p *Pinning) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// onRequest indexes the request and closes its session's previous pin.
// An error is transient: the caller naks the request.
func (p *Pinning) onRequest(d hints.Delivery, req *schemas.RequestEvent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if d.Unknown != nil {
		return d.Unknown
	}
	e := IndexEntry{Seq: d.Seq}
	if v, ok := header(req.Headers, HeaderSimToolCall); ok {
		e.SimToolMs = 1 // announced, time unknown
		if ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && ms > 0 {
			e.SimToolMs = ms
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
	rec, ok, err := p.Slots.Take(ctx, req.SessionID)
	if err != nil || !ok {
		return err
	}
	at := d.Time
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
	if p.ReleaseOnNextTurn && p.now().Before(time.UnixMilli(rec.ExpiresAtMs)) {
		p.send(actions.Pin{Trigger: rec.Trigger, Slot: rec.Slot}, "release", time.Second, nil)
	}
	return nil
}

// pinResult says what a response came to; transient results are retried.
type pinResult int

const (
	pinDone   pinResult = iota // settled: ack
	pinRetry                   // try again later: nak with delay
	pinQueued                  // handed to the sender, which settles d (Delivery.Done)
)

// onResponse pins the conversation's pages if the response ends in a tool
// call (or its request announced one). For pinQueued, d.Done is called
// once the pin has left or was dropped.
func (p *Pinning) onResponse(d hints.Delivery, resp *schemas.ResponseEvent) pinResult {
	p.Tick(eventTime(d, resp.CompletedAtMs))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	toolCall := resp.FinishReason == "tool_calls" || len(resp.ToolCalls) > 0
	e, err := p.Index.Entry(ctx, resp.RequestID)
	switch {
	case errors.Is(err, ErrRequestNotFound) && !toolCall:
		p.Counters.ResponsesNoPin.Inc()
		return pinDone // nothing announced a tool call; nothing to wait for
	case err != nil:
		return p.retryOrSkip(d, resp, err)
	}
	if !toolCall && e.SimToolMs == 0 {
		p.Counters.ResponsesNoPin.Inc()
		return pinDone
	}
	// Reading the request back is a stream round trip: tell JetStream the
	// response is being worked on.
	d.InProgress()
	req, err := p.Index.Request(ctx, resp.RequestID, e)
	if err != nil {
		return p.retryOrSkip(d, resp, err)
	}
	w, ok := p.Workers.Get(resp.WorkerID)
	if !ok {
		p.skip("unknown_worker", resp)
		return pinDone
	}
	tokens := append(append(make([]uint32, 0, len(req.TokenIDs)+len(resp.OutputTokenIDs)), req.TokenIDs...), resp.OutputTokenIDs...)
	keys, err := actions.ObjectKeys(w.ObjectLayout, tokens)
	if errors.Is(err, actions.ErrNoLayout) {
		p.skip("no_layout", resp)
		return pinDone
	}
	if err != nil || len(keys) == 0 {
		p.skip("no_full_page", resp)
		return pinDone
	}
	tools := make([]string, 0, len(resp.ToolCalls))
	for _, tc := range resp.ToolCalls {
		tools = append(tools, tc.Name)
	}
	expected := time.Duration(e.SimToolMs) * time.Millisecond
	if e.SimToolMs <= 1 {
		var src tooltime.Source
		expected, src = p.Learner.Expected(tools)
		p.Counters.PinsExpectedFrom.Inc(src.String())
	}
	ttl := p.TTL.TTL(expected)
	pageTokens := len(tokens) / int(w.ObjectLayout.PageSize) * int(w.ObjectLayout.PageSize)
	session := req.SessionID
	if session == "" {
		session = resp.SessionID
	}
	slot := "request:" + resp.RequestID
	if session != "" {
		slot = "session:" + session
	}
	pin := actions.Pin{Trigger: resp.RequestID, Slot: slot, Keys: keys, TTL: ttl,
		Priority: actions.Priority(pageTokens), Tokens: pageTokens}
	queued := p.send(pin, "pin", p.TTL.Deadline(ttl), d.Settled)
	if session != "" {
		completed := eventTime(d, resp.CompletedAtMs)
		rec := PinRecord{Slot: slot, Trigger: resp.RequestID, Tools: tools, CompletedAtMs: completed.UnixMilli(),
			ExpiresAtMs: p.now().Add(ttl).UnixMilli()}
		rev, err := p.putSlot(ctx, session, rec)
		if err != nil {
			if isBucketFull(err) {
				p.Counters.PinsSlotsFull.Inc()
			}
			p.Log.Warn("pin slot not recorded", "session", session, "err", err)
		} else if queued {
			p.schedule(session, pin, tools, completed, ttl, rev)
		}
	}
	if queued {
		return pinQueued
	}
	return pinDone
}

// retryOrSkip waits for a request another member may still be indexing,
// a few times, then gives up on the pin (never on the response).
func (p *Pinning) retryOrSkip(d hints.Delivery, resp *schemas.ResponseEvent, err error) pinResult {
	if d.Unknown == nil && d.Delivered < 5 {
		p.Counters.ResponsesRetried.Inc()
		return pinRetry
	}
	p.skip("request_not_found", resp)
	p.Log.Debug("no request for tool-call response", "request_id", resp.RequestID, "err", err)
	return pinDone
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
		dropped.Inc(dropReason(err))
		p.Log.Warn(what+" not queued", "trigger", pin.Trigger, "err", err)
		return false
	}
	queued, _ := p.Counters.Hint(what)
	queued.Inc()
	p.Log.Debug(what+" queued", "trigger", pin.Trigger, "slot", pin.Slot, "keys", len(pin.Keys),
		"ttl", pin.TTL, "priority", pin.Priority)
	return true
}
