package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderWakeup marks a request that is not a turn but a thread being
// opened: the trigger of a wake-up prefetch.
const HeaderWakeup = "x-dynamo-experimental-wakeup"

// Selector chooses the worker a prompt would be routed to.
type Selector interface {
	Select(req *schemas.RequestEvent) (routing.Candidate, error)
}

// HintSender hands a hint to the sender of an endpoint without blocking.
type HintSender interface {
	Send(endpoint string, h actions.Hint) error
}

// RequestConfig configures a RequestConsumer.
type RequestConfig struct {
	Stream  string   // stream holding request events (required)
	Durable string   // durable consumer name; default "hintstream-requests"
	Filter  []string // subjects; default the stream's own
	// DeliverNew starts a newly created durable at the stream's end rather
	// than its beginning: old wake-ups can only make expired hints.
	DeliverNew bool
	// PrefetchTTL is how long after the wake-up a prefetch stays useful
	// (its expires_at_ms); default 2s.
	PrefetchTTL time.Duration
	// MaxAckPending bounds messages in flight; default 1024.
	MaxAckPending int
	// AckWait is the redelivery timeout; default 30s.
	AckWait time.Duration
	Limits  schemas.Limits
}

// RequestConsumer consumes request events and sends a kv.prefetch for
// every wake-up.
type RequestConsumer struct {
	js       jetstream.JetStream
	cfg      RequestConfig
	selector Selector
	sender   HintSender
	dlq      *DeadLetter
	counters *metrics.Counters
	log      *slog.Logger
	now      func() time.Time

	mu sync.Mutex
	cc jetstream.ConsumeContext
}

// NewRequestConsumer wires a consumer; Start begins consuming.
func NewRequestConsumer(js jetstream.JetStream, cfg RequestConfig, sel Selector, snd HintSender,
	dlq *DeadLetter, counters *metrics.Counters, log *slog.Logger) *RequestConsumer {
	if cfg.Durable == "" {
		cfg.Durable = "hintstream-requests"
	}
	if cfg.PrefetchTTL <= 0 {
		cfg.PrefetchTTL = 2 * time.Second
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = 1024
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &RequestConsumer{js: js, cfg: cfg, selector: sel, sender: snd, dlq: dlq,
		counters: counters, log: log.With("consumer", cfg.Durable), now: time.Now}
}

// Start creates (or attaches to) the durable consumer and consumes until
// Stop.
func (c *RequestConsumer) Start(ctx context.Context) error {
	cc := jetstream.ConsumerConfig{
		Durable:        c.cfg.Durable,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.cfg.AckWait,
		MaxAckPending:  c.cfg.MaxAckPending,
		FilterSubjects: c.cfg.Filter,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if c.cfg.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	cons, err := c.js.Consumer(ctx, c.cfg.Stream, c.cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = c.js.CreateConsumer(ctx, c.cfg.Stream, cc)
	}
	if err != nil {
		return fmt.Errorf("request consumer %s on %s: %w", c.cfg.Durable, c.cfg.Stream, err)
	}
	h, err := cons.Consume(c.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.log.Warn("consume", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("request consumer %s: %w", c.cfg.Durable, err)
	}
	c.mu.Lock()
	c.cc = h
	c.mu.Unlock()
	return nil
}

// Stop stops fetching and waits until the message in hand is finished.
func (c *RequestConsumer) Stop() {
	c.mu.Lock()
	h := c.cc
	c.cc = nil
	c.mu.Unlock()
	if h == nil {
		return
	}
	h.Drain()
	<-h.Closed()
}

func (c *RequestConsumer) handle(msg jetstream.Msg) {
	c.counters.Inc("requests.received")
	req, err := c.cfg.Limits.DecodeRequest(msg.Data(), msg.Headers().Get("Content-Type"))
	if err != nil {
		c.reject(msg, err)
		return
	}
	if !isWakeup(req.Headers) {
		c.counters.Inc("requests.plain")
		c.ack(msg)
		return
	}
	c.counters.Inc("requests.wakeup")
	c.prefetch(msg, req)
	c.ack(msg)
}

// prefetch derives and hands off the hint; every way it can end without
// a hint is counted, none of them is a reason to redeliver.
func (c *RequestConsumer) prefetch(msg jetstream.Msg, req *schemas.RequestEvent) {
	base := c.now()
	if req.ReceivedAtMs > 0 {
		base = time.UnixMilli(req.ReceivedAtMs)
	} else if md, err := msg.Metadata(); err == nil {
		base = md.Timestamp
	}
	expires := base.Add(c.cfg.PrefetchTTL)
	if !c.now().Before(expires) {
		c.counters.IncLabel("hints.prefetch.skipped", "expired")
		return
	}
	cand, err := c.selector.Select(req)
	if err != nil {
		c.counters.IncLabel("hints.prefetch.skipped", "no_worker")
		c.log.Debug("no worker for wake-up", "request_id", req.RequestID, "model", req.Model)
		return
	}
	env, err := actions.NewPrefetchEnvelope(actions.Prefetch{
		RequestID: req.RequestID, SessionID: req.SessionID, Model: req.Model,
		TokenIDs: req.TokenIDs, DpRank: cand.Worker.DpRank, ExpiresAt: expires,
	})
	var body []byte
	if err == nil {
		body, err = actions.EncodeEnvelope(env)
	}
	if err != nil {
		c.counters.IncLabel("hints.prefetch.skipped", "encode")
		c.log.Error("encode prefetch", "request_id", req.RequestID, "err", err)
		return
	}
	err = c.sender.Send(cand.Endpoint, actions.Hint{MessageID: env.MessageID, Body: body, Deadline: expires})
	if err != nil {
		c.counters.IncLabel("hints.prefetch.dropped", dropReason(err))
		c.log.Warn("prefetch not queued", "request_id", req.RequestID, "endpoint", cand.Endpoint, "err", err)
		return
	}
	c.counters.Inc("hints.prefetch.queued")
	c.log.Debug("prefetch queued", "request_id", req.RequestID, "worker", cand.Worker.WorkerID,
		"dp_rank", cand.Worker.DpRank, "overlap_blocks", cand.Overlap, "endpoint", cand.Endpoint)
}

func (c *RequestConsumer) reject(msg jetstream.Msg, err error) {
	reason := "malformed"
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		reason = de.Reason
	}
	c.counters.IncLabel("requests.malformed", reason)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if dErr := c.dlq.Publish(ctx, "requests", reason, msg); dErr != nil {
		// Without a stored copy, terminating would lose the event: let it
		// come back instead.
		c.log.Error("dead-letter failed; will redeliver", "err", dErr)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	c.log.Warn("malformed request terminated", "subject", msg.Subject(), "reason", reason, "err", err)
	if tErr := msg.TermWithReason(reason); tErr != nil {
		c.log.Warn("term", "err", tErr)
	}
}

func (c *RequestConsumer) ack(msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		c.counters.Inc("requests.ack_errors")
		c.log.Warn("ack", "err", err)
	}
}

func isWakeup(h map[string]string) bool {
	v, ok := h[HeaderWakeup]
	if !ok {
		// The schema asks for lower-case names; accept what a careless
		// frontend sends rather than silently lose the wake-up.
		for k, hv := range h {
			if strings.EqualFold(k, HeaderWakeup) {
				v, ok = hv, true
				break
			}
		}
	}
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return false
	}
	return true
}

func dropReason(err error) string {
	switch {
	case errors.Is(err, actions.ErrQueueFull):
		return "queue_full"
	case errors.Is(err, actions.ErrExpired):
		return "expired"
	case errors.Is(err, actions.ErrClosed):
		return "closed"
	}
	return "error"
}
