package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// retentionObserver feeds the retention planner from the engine's turns
// and responses and sends its plans to the Mooncake master's pin socket.
// Plans are made on the events' clock, inside the turn that crosses an
// interval, so a replay plans as a live instance does.
type retentionObserver struct {
	planner *retention.Planner
	workers interface {
		WorkersFor(model string) []schemas.WorkerRecord
	}
	learner  func() *tooltime.Learner
	sender   actions.Sender
	endpoint string
	counters *metrics.Families
	log      *slog.Logger
	// group is nil unless Config.RetentionGroup (retention_group.go).
	group *retention.Group
}

// layout is the object layout of the model's workers (the first that
// publishes one: a model's workers share the store's naming).
func (o *retentionObserver) layout(model string) *schemas.ObjectLayout {
	for _, w := range o.workers.WorkersFor(model) {
		if w.ObjectLayout != nil {
			return w.ObjectLayout
		}
	}
	return nil
}

// ObserveRequest records a turn's pages (a wake-up is not a turn) and
// plans.
func (o *retentionObserver) ObserveRequest(_ context.Context, r engine.ObservedRequest) {
	if r.Wakeup {
		return
	}
	at, req := r.At, r.Event
	if at.IsZero() {
		at = time.Now()
	}
	l := o.layout(req.Model)
	var keys []string
	var err error
	if l != nil && req.LoraName == "" {
		keys, err = actions.ObjectKeysIn(l, req.TokenIDs, actions.Namespace{CacheSalt: req.CacheSalt})
	}
	switch {
	case l == nil:
		o.counters.Retention.Skipped.Inc("no_layout")
	case req.LoraName != "":
		// As the tool-call pins: SGLang's keys then carry a lora_id
		// hintstream cannot know.
		o.counters.Retention.Skipped.Inc("unknown_namespace")
	case err != nil || len(keys) == 0:
		o.counters.Retention.Skipped.Inc("no_full_page")
	default:
		o.planner.Request(at, req.SessionID, keys, int(l.PageSize))
		o.publish(retention.Observation{Kind: retention.ObserveRequest, At: at, Session: req.SessionID, Keys: keys,
			PageTokens: int(l.PageSize)})
	}
	o.plan(at)
}

// ObserveResponse records a tool call with its class's learned time.
func (o *retentionObserver) ObserveResponse(_ context.Context, r engine.ObservedResponse) {
	at, resp := r.At, r.Event
	if resp.FinishReason != "tool_calls" && len(resp.ToolCalls) == 0 {
		return
	}
	if at.IsZero() {
		at = time.Now()
	}
	tools := make([]string, 0, len(resp.ToolCalls))
	for _, tc := range resp.ToolCalls {
		tools = append(tools, tc.Name)
	}
	var expected time.Duration
	if l := o.learner(); l != nil {
		expected, _ = l.Expected(tools)
	}
	o.planner.ToolCall(at, resp.SessionID, expected)
	if resp.SessionID != "" {
		o.publish(retention.Observation{Kind: retention.ObserveToolCall, At: at, Session: resp.SessionID, Expected: expected})
	}
}

// plan sends the planner's pin actions, if a plan is due at at.
func (o *retentionObserver) plan(at time.Time) {
	pins := o.planner.Plan(at)
	if pins == nil || o.shadow() {
		return
	}
	o.counters.Retention.Plans.Inc()
	for _, p := range pins {
		env, err := actions.NewPinEnvelope(actions.Pin{Trigger: p.Trigger, Slot: p.Slot, Keys: p.Keys, TTL: p.TTL,
			Priority: p.Priority, Tokens: p.Tokens, Revision: p.Revision})
		var body []byte
		if err == nil {
			body, err = actions.EncodeEnvelope(env)
		}
		if err != nil {
			o.counters.Retention.Dropped.Inc("error")
			o.log.Error("encode retention pin", "slot", p.Slot, "err", err)
			continue
		}
		// A plan is worth its interval: later, the next one replaces it.
		deadline := time.Now().Add(o.planner.Config().Interval)
		if err := o.sender.Send(o.endpoint, actions.Hint{MessageID: env.MessageID, Body: body, Deadline: deadline}); err != nil {
			o.counters.Retention.Dropped.Inc(actions.DropReason(err))
			o.log.Warn("retention pin not queued", "slot", p.Slot, "err", err)
			continue
		}
		o.counters.Retention.Queued.Inc()
		switch p.Kind {
		case "pin":
			o.counters.Retention.Pins.Inc()
		case "renew":
			o.counters.Retention.Renewals.Inc()
		default:
			o.counters.Retention.Releases.Inc()
		}
	}
}

// retentionPlanner builds the planner's observer when Config.Retention is
// set; pins must be on (it sends to their endpoint). Nil: off.
func (s *Service) retentionPlanner(ctx context.Context, pinDeps *pins.Deps, sender actions.Sender) (*retentionObserver, error) {
	if s.cfg.Retention == nil {
		return nil, nil
	}
	if pinDeps == nil {
		s.log.Warn("retention planner off: it needs the pin endpoint")
		return nil, nil
	}
	p, err := retention.New(*s.cfg.Retention)
	if err != nil {
		return nil, err
	}
	s.Retention = p
	o := &retentionObserver{planner: p, workers: modelWorkers{s}, sender: sender, endpoint: pinDeps.Endpoint,
		counters: s.Counters, log: s.log, learner: func() *tooltime.Learner { return s.Learner }}
	if s.cfg.RetentionGroup != nil {
		if err := s.startRetentionGroup(ctx, o); err != nil {
			return nil, err
		}
	}
	return o, nil
}
