package service

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// RequestTraceConfig is where run reads Dynamo's request trace (--source
// dynamo).
type RequestTraceConfig struct {
	// Subject the nats sink publishes on (requesttrace.DefaultSubject).
	Subject string
	// Stream created on Subject when no stream captures it
	// (requesttrace.DefaultTraceStream); a stream that does is attached.
	Stream string
	// Durable is the group's durable consumer (default
	// <group>-request-trace).
	Durable string
	Limits  requesttrace.Limits
}

// startRequestTrace attaches to the stream that captures the request
// trace's subject, whatever its name and config (an operator's stream is
// never changed), or creates a bounded one (requesttrace.StreamConfig)
// when none does; then it starts the group's durable consumer on it.
func (s *Service) startRequestTrace(ctx context.Context, dlq *consumers.DeadLetter) error {
	rt := s.cfg.RequestTrace
	if rt == nil {
		return nil
	}
	name, err := s.js.StreamNameBySubject(ctx, rt.Subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		c := requesttrace.StreamConfig(rt.Subject)
		c.Name = rt.Stream
		if _, _, err := streams.Ensure(ctx, s.js, c, streams.WithUpdate(s.cfg.UpdateStreams), streams.WithLogger(s.log)); err != nil {
			return fmt.Errorf("request trace stream: %w", err)
		}
		name = c.Name
	case err != nil:
		return fmt.Errorf("request trace: look up the stream of %q: %w", rt.Subject, err)
	default:
		s.log.Info("request trace: attached to the stream that captures its subject", "stream", name, "subject", rt.Subject)
	}
	if s.agents == nil {
		s.log.Info("request trace: tool records are counted only (agent hints off: --agents)")
	}
	// A record is a message like the others: run's --max-message-bytes
	// and --max-headers bound it too.
	lim := rt.Limits
	if el := s.cfg.Decisions.Limits; lim.MaxBytes == 0 && el.MaxBytes > 0 {
		lim.MaxBytes = el.MaxBytes
	}
	if el := s.cfg.Decisions.Limits; lim.MaxHeaders == 0 && el.MaxHeaders > 0 {
		lim.MaxHeaders = el.MaxHeaders
	}
	h := newTraceHandler(lim, s.engine, s.agents, s.Counters.RequestTrace)
	h.knownWorker = s.knownWorker
	c := consumers.NewRequestTraceConsumer(s.js, consumers.TriggerConfig{Stream: name, Durable: rt.Durable,
		Filter: []string{rt.Subject}, DeliverNew: !s.cfg.RequestsDeliverAll, AckWait: s.cfg.AckWait,
		MaxAckPending: s.cfg.MaxAckPending}, h.Decide, dlq, s.Counters, s.log)
	if err := c.Start(ctx); err != nil {
		c.Stop()
		return fmt.Errorf("request trace stream %s: %w", name, err)
	}
	s.lc.run(stageResponses, "request trace consumer", c.Run)
	return nil
}

// traceHandler acts on one request-trace record: a request_end as a
// response event on the engine's response path (Engine.OnResponse: the
// pins, then the observers: the agent tracker's outcomes and turns),
// preceded for the tracker by the request it ends; a tool record on the
// tracker, as a harness's; a request_payload kept for its request's
// request_end (headers). A record that does not decode is Rejected, so
// the consumer's middleware counts it by reason and dead-letters it.
type traceHandler struct {
	lim      requesttrace.Limits
	engine   *engine.Engine
	agents   *agents.Tracker // nil: agent hints off
	m        *metrics.RequestTrace
	payloads *payloadCache
	// knownWorker tells a worker the registry knows (nil: every one).
	knownWorker func(id uint64) bool
}

func newTraceHandler(lim requesttrace.Limits, e *engine.Engine, a *agents.Tracker, m *metrics.RequestTrace) *traceHandler {
	return &traceHandler{lim: lim, engine: e, agents: a, m: m, payloads: newPayloadCache(maxPayloads)}
}

// Decide is the consumer's consumers.Decide.
func (h *traceHandler) Decide(ctx context.Context, d engine.Delivery, m engine.Message) engine.Outcome {
	rec, err := h.lim.Decode(m.Data)
	if err != nil {
		return engine.Rejected(err)
	}
	h.m.Records.Inc(rec.EventType)
	switch {
	case rec.EventType == requesttrace.RequestEnd:
		return h.requestEnd(ctx, d, rec)
	case rec.IsTool():
		if h.agents != nil {
			h.agents.OnRecord(ctx, rec.AgentRecord())
		}
	case rec.EventType == requesttrace.RequestPayload:
		h.payloads.put(rec.Payload)
	}
	return engine.Done()
}

// requestEnd hands a request_end to the engine's response path. rec
// carries the prompt's full-block sequence hashes at its trace block size
// (rec.Request.Replay.Full(), .TraceBlockSize), the prompt's identity
// where no token ids exist.
func (h *traceHandler) requestEnd(ctx context.Context, d engine.Delivery, rec *requesttrace.Record) engine.Outcome {
	if id, _, ok := rec.Request.WorkerID(); ok && h.knownWorker != nil && !h.knownWorker(id) {
		// A hint for it would have no endpoint, and its pages no index.
		return engine.Rejected(&schemas.DecodeError{Kind: requesttrace.Kind, Reason: requesttrace.ReasonUnknownWorker})
	}
	if rec.Request.Replay.HasPartialTail() && d.Delivered <= 1 {
		h.m.PartialTails.Inc()
	}
	req := rec.RequestEvent(h.payloads.take(rec.Request.RequestID))
	if h.agents != nil {
		// The tracker follows an agent's turns from their requests; the
		// trace has no record at a request's start, so its end stands for
		// it (a redelivery is the same request again: ignored).
		h.agents.ObserveRequest(req)
	}
	if out := startTurn(ctx, h.engine, d, req); out.Verdict == engine.Retry || out.Verdict == engine.Reject {
		return out
	}
	resp := rec.Response()
	traceSequences(resp, rec.Request.Replay)
	return h.engine.OnResponse(ctx, d, resp)
}

// knownWorker: the registry holds worker id, or holds no worker at all
// (a deployment that registers none has nothing to tell a worker from).
func (s *Service) knownWorker(id uint64) bool {
	if s.registry == nil {
		return true
	}
	if _, ok := s.registry.Get(id); ok {
		return true
	}
	return len(s.registry.Workers()) == 0
}

// maxPayloads bounds the payloads kept for a request_end not seen yet.
const maxPayloads = 1024

// payloadCache keeps request_payload records by request id until their
// request_end takes them; past its bound the oldest go (a payload is
// optional: a lost one loses its headers only).
type payloadCache struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*requesttrace.Payload
	order []string
}

func newPayloadCache(max int) *payloadCache {
	return &payloadCache{max: max, byID: map[string]*requesttrace.Payload{}}
}

func (c *payloadCache) put(p *requesttrace.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[p.RequestID]; !ok {
		for len(c.order) >= c.max {
			delete(c.byID, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, p.RequestID)
	}
	c.byID[p.RequestID] = p
}

func (c *payloadCache) take(id string) *requesttrace.Payload {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byID[id]
	delete(c.byID, id) // its id leaves order when it reaches the front
	return p
}
