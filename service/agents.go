package service

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/streams"
)

// agentKey is in every request or response that names an agent, in JSON
// and in msgpack alike: events without it are not decoded a second time.
var agentKey = []byte("agent_context")

// startAgents sets up agent-aware hints (Config.Agents): the tracker over
// the engine, and the AGENT_EVENTS stream, created when absent. It
// returns the request and response decisions wrapped so the tracker sees
// each agent's turns. Off, it returns them as they are.
func (s *Service) startAgents(ctx context.Context, request, response consumers.Decide) (consumers.Decide, consumers.Decide, error) {
	if s.cfg.Agents == nil {
		return request, response, nil
	}
	tr, err := agents.New(*s.cfg.Agents, s.engine, metrics.NewAgent(s.Counters), s.log.With("component", "agents"), nil)
	if err != nil {
		return nil, nil, err
	}
	if _, _, err := streams.Ensure(ctx, s.js, s.agentStream(), streams.WithUpdate(s.cfg.UpdateStreams), streams.WithLogger(s.log)); err != nil {
		return nil, nil, fmt.Errorf("agent events stream: %w", err)
	}
	store, err := agents.OpenContextStore(ctx, s.js, "")
	if err != nil {
		return nil, nil, err
	}
	tr.Share(store)
	s.agents = tr
	// The outcomes of the engine's own hints are followed too.
	s.engine.ObservePrefetches(tr)
	if pn := s.engine.Pins(); pn != nil {
		pn.Observer = tr
	}
	lim := s.cfg.Decisions.Limits
	wrapReq := func(ctx context.Context, d engine.Delivery, m engine.Message) engine.Outcome {
		out := request(ctx, d, m)
		if out.Verdict != engine.Reject && bytes.Contains(m.Data, agentKey) {
			if req, _, err := engine.DecodeRequest(lim, m); err == nil {
				tr.ObserveRequest(req)
			}
		}
		return out
	}
	wrapResp := func(ctx context.Context, d engine.Delivery, m engine.Message) engine.Outcome {
		out := engine.Done()
		if response != nil {
			out = response(ctx, d, m)
		}
		if out.Verdict != engine.Reject {
			if resp, err := engine.DecodeResponse(lim, m); err == nil {
				tr.ObserveResponse(resp)
			} else if response == nil {
				return engine.Rejected(err)
			}
		}
		return out
	}
	return wrapReq, wrapResp, nil
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
