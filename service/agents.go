package service

import (
	"context"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// agentTracker makes the tracker of agent-aware hints (Config.Agents),
// nil when off. It is one of the engine's observers, and sends its hints
// through the engine (engineHinter): made before the engine, it reaches
// it once it exists, before any event is decided on.
func (s *Service) agentTracker() (*agents.Tracker, error) {
	if s.cfg.Agents == nil {
		return nil, nil
	}
	cfg := *s.cfg.Agents
	cfg.Affinity = !s.cfg.NoAffinity
	return agents.New(cfg, engineHinter{s}, metrics.NewAgent(s.Counters), s.log.With("component", "agents"), nil)
}

// engineHinter is the service's engine as the tracker's agents.Hinter.
type engineHinter struct{ s *Service }

func (h engineHinter) PrefetchContext(req *schemas.RequestEvent) (engine.Sent, bool) {
	return h.s.engine.PrefetchContext(req)
}

func (h engineHinter) PinContext(ctx context.Context, resp *schemas.ResponseEvent) bool {
	return h.s.engine.PinContext(ctx, resp)
}

func (h engineHinter) DeviceBlocks(req *schemas.RequestEvent, worker uint64, dpRank uint32) int {
	return h.s.engine.DeviceBlocks(req, worker, dpRank)
}

func (h engineHinter) PinTTL(tool string) time.Duration { return h.s.engine.PinTTL(tool) }

// startAgents creates the AGENT_EVENTS stream when absent and shares the
// tracker's programs with the group through the context bucket (agents
// off: nothing).
func (s *Service) startAgents(ctx context.Context) error {
	if s.agents == nil {
		return nil
	}
	if _, _, err := streams.Ensure(ctx, s.js, s.agentStream(), streams.WithUpdate(s.cfg.UpdateStreams), streams.WithLogger(s.log)); err != nil {
		return fmt.Errorf("agent events stream: %w", err)
	}
	store, err := agents.OpenContextStore(ctx, s.js, "")
	if err != nil {
		return err
	}
	s.agents.Share(store)
	return nil
}

func (s *Service) agentStream() streams.Config {
	c := agentevents.StreamConfig()
	if s.cfg.AgentEventsStream != "" {
		c.Name = s.cfg.AgentEventsStream
	}
	return c
}

// startAgentEvents starts the AGENT_EVENTS consumer and the tracker's
// clock. The group shares one durable consumer, as it does the requests
// and responses: each tool event is acted on by exactly one member, which
// reads the program's last turn back from the context bucket when
// another member consumed it (agents.Tracker.Share). A newly created
// consumer starts at the stream's end: old tool events can only make
// stale hints.
func (s *Service) startAgentEvents(ctx context.Context, dlq *consumers.DeadLetter) error {
	if s.agents == nil {
		return nil
	}
	cfg := s.agentStream()
	c := consumers.NewAgentEventConsumer(s.js, consumers.TriggerConfig{Stream: cfg.Name, Filter: cfg.Subjects,
		DeliverNew: true, AckWait: s.cfg.AckWait, MaxAckPending: s.cfg.MaxAckPending},
		agentevents.DeadLetterKind, s.agents.Decide, dlq, s.Counters, s.log)
	if err := c.Start(ctx); err != nil {
		c.Stop()
		return fmt.Errorf("agent events stream %s: %w", cfg.Name, err)
	}
	s.lc.run(stageState, "agent events consumer", c.Run)
	s.lc.run(stageResponses, "agent tracker", func(ctx context.Context) error { return s.agents.Run(ctx, 0) })
	return nil
}

// AgentOutcomes are the last agent hints and their fate (nil when agent
// hints are off), for /v1/outcomes.
func (s *Service) AgentOutcomes() ([]agents.Record, bool) {
	if s.agents == nil {
		return nil, false
	}
	return s.agents.Recent(), true
}

// outcomesView is AgentOutcomes for /v1/outcomes.
func (s *Service) outcomesView() (observe.OutcomesView, bool) {
	recs, ok := s.AgentOutcomes()
	if !ok {
		return observe.OutcomesView{}, false
	}
	v := observe.OutcomesView{Outcomes: make([]observe.OutcomeView, 0, len(recs))}
	for _, r := range recs {
		v.Outcomes = append(v.Outcomes, observe.OutcomeView{ID: r.ID, Hint: r.Hint, Kind: r.Kind, Session: r.Session,
			WorkflowType: r.WorkflowType, ToolClass: r.ToolClass, WorkerID: r.WorkerID, DpRank: r.DpRank, Tokens: r.Tokens,
			SentAt: r.SentAt, Expires: r.Expires, Timing: r.Timing, Outcome: r.Outcome, DecidedAt: r.DecidedAt})
	}
	return v, true
}
