package consumers

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/hints"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
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
	// MaxDeliver bounds deliveries of one message; then it is copied to
	// the dead-letter subject. Default DefaultMaxDeliver; Unbounded: no bound.
	MaxDeliver int
	Limits     schemas.Limits
	// Clock is the time expiry is judged by; default time.Now (a replay
	// gives each event's own time).
	Clock func() time.Time
	// Affinity, if set, is told each queued prefetch's worker (affinity.go).
	Affinity AffinityRecorder
}

// RequestConsumer consumes request events and sends a kv.prefetch for
// every wake-up. With pinning on, it also indexes every request for the
// response consumer and releases a session's pin slot on its next turn.
type RequestConsumer struct {
	cfg      RequestConfig
	selector Selector
	sender   HintSender
	pins     *Pinning
	counters *metrics.Counters
	log      *slog.Logger
	now      func() time.Time
	d        durable
	rej      rejecter
}

// NewRequestConsumer wires a consumer; Start begins consuming. pins may be
// nil (pinning off).
func NewRequestConsumer(js jetstream.JetStream, cfg RequestConfig, sel Selector, snd HintSender,
	pins *Pinning, dlq *DeadLetter, counters *metrics.Counters, log *slog.Logger) *RequestConsumer {
	if cfg.Durable == "" {
		cfg.Durable = DefaultRequestsDurable
	}
	if cfg.PrefetchTTL <= 0 {
		cfg.PrefetchTTL = 2 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("consumer", cfg.Durable)
	return &RequestConsumer{cfg: cfg, selector: sel, sender: snd, pins: pins, counters: counters, log: log,
		now: clockOr(cfg.Clock),
		d: durable{js: js, stream: cfg.Stream, name: cfg.Durable, filter: cfg.Filter, deliverNew: cfg.DeliverNew,
			ackWait: cfg.AckWait, maxAckPending: cfg.MaxAckPending, maxDeliver: cfg.MaxDeliver, log: log,
			dlq: dlq, dlqKind: "requests", counters: counters},
		rej: rejecter{kind: "requests", dlq: dlq, counters: counters, log: log}}
}

// Start creates (or attaches to) the durable consumer and consumes until
// Stop.
func (c *RequestConsumer) Start(ctx context.Context) error { return c.d.start(ctx, c.handle, &c.rej) }

// Stop stops fetching and waits until the message in hand is finished.
func (c *RequestConsumer) Stop() { c.d.stop() }

// handle is the JetStream side: it decides on the message and acts on
// the Outcome.
func (c *RequestConsumer) handle(msg jetstream.Msg) {
	d := deliveryOf(msg, func(bool) { ack(msg, c.counters, "requests", c.log) })
	settle(msg, c.Decide(d, msg.Data(), msg.Headers()), &c.rej)
}

// Decide decodes one request event and makes its decisions (index it,
// release its session's pin, prefetch for a wake-up), apart from how it
// arrived: the consumer settles its message by the Outcome, a replay
// calls it on history.
func (c *RequestConsumer) Decide(d hints.Delivery, data []byte, hdr nats.Header) hints.Outcome {
	c.counters.Inc("requests.received")
	err := c.cfg.Limits.CheckHeaders("request", hdr)
	var req *schemas.RequestEvent
	if err == nil {
		req, err = c.cfg.Limits.DecodeRequest(data, hdr.Get("Content-Type"))
	}
	if err != nil {
		return hints.Rejected(err)
	}
	odd := headerUnrecognised(req.Headers, hdr)
	mergeNATSHeaders(req, hdr)
	return c.OnRequest(d, req, odd)
}

// OnRequest decides on a decoded request; odd says its headers looked
// like hint headers but were not (see headers.go).
func (c *RequestConsumer) OnRequest(d hints.Delivery, req *schemas.RequestEvent, odd bool) hints.Outcome {
	wakeup := isWakeup(req.Headers)
	// A wake-up announces a turn, it is not one: it must neither release
	// the session's pin (the real request may land on another worker and
	// need the pinned pages from L3) nor end the tool's observed time early.
	if c.pins != nil && !wakeup {
		if err := c.pins.onRequest(d, req); err != nil {
			// The index must hold the request before it is acked, or a
			// tool-call response could find nothing to pin.
			c.counters.Inc("requests.transient_errors")
			c.log.Warn("request not indexed; will redeliver", "request_id", req.RequestID, "err", err)
			return hints.RetryAfter(time.Second, err)
		}
	}
	if c.pins != nil {
		// After onRequest: a session's next turn takes its slot before
		// its pin could be renewed.
		c.pins.Tick(eventTime(d, req.ReceivedAtMs))
	}
	if odd {
		// Not silently plain: the frontend meant something (see headers.go).
		c.counters.Inc("requests.header_unrecognised")
		c.log.Debug("request header looks like a hint header but is not one",
			"request_id", req.RequestID, "wakeup", wakeup)
	}
	if !wakeup {
		if !odd {
			c.counters.Inc("requests.plain")
		}
		return hints.Done()
	}
	c.counters.Inc("requests.wakeup")
	if c.prefetch(d, req) {
		return hints.HeldUntilSent()
	}
	return hints.Done()
}

// prefetch derives and hands off the hint; every way it can end without
// a hint is counted, none of them is a reason to redeliver. It returns
// true when the hint was queued: the sender settles d once the hint has
// left (or was dropped), so a crash in between redelivers the wake-up.
func (c *RequestConsumer) prefetch(d hints.Delivery, req *schemas.RequestEvent) bool {
	base := c.now()
	if req.ReceivedAtMs > 0 {
		base = time.UnixMilli(req.ReceivedAtMs)
	} else if d.Unknown == nil {
		base = d.Time
	}
	// A time stamped ahead of our clock (skew, or hostile) must not stretch
	// the hint's life: the sender retries it until its deadline.
	if now := c.now(); base.After(now) {
		base = now
	}
	expires := base.Add(c.cfg.PrefetchTTL)
	if !c.now().Before(expires) {
		c.counters.IncLabel("hints.prefetch.skipped", "expired")
		return false
	}
	cand, err := c.selector.Select(req)
	if err != nil {
		c.counters.IncLabel("hints.prefetch.skipped", "no_worker")
		c.log.Debug("no worker for wake-up", "request_id", req.RequestID, "model", req.Model)
		return false
	}
	body, id, err := actions.EncodePrefetch(actions.Prefetch{
		RequestID: req.RequestID, SessionID: req.SessionID, Model: req.Model,
		TokenIDs: req.TokenIDs, DpRank: cand.Worker.DpRank, ExpiresAt: expires,
	})
	if err != nil {
		c.counters.IncLabel("hints.prefetch.skipped", "encode")
		c.log.Error("encode prefetch", "request_id", req.RequestID, "err", err)
		return false
	}
	err = c.sender.Send(cand.Endpoint, actions.Hint{MessageID: id, Body: body, Deadline: expires,
		Done: d.Settled})
	if err != nil {
		c.counters.IncLabel("hints.prefetch.dropped", dropReason(err))
		c.log.Warn("prefetch not queued", "request_id", req.RequestID, "endpoint", cand.Endpoint, "err", err)
		return false
	}
	c.counters.Inc("hints.prefetch.queued")
	c.recordAffinity(req, cand, expires)
	c.log.Debug("prefetch queued", "request_id", req.RequestID, "worker_id", cand.Worker.WorkerID,
		"dp_rank", cand.Worker.DpRank, "overlap_blocks", cand.Overlap, "endpoint", cand.Endpoint)
	return true
}

func clockOr(c func() time.Time) func() time.Time {
	if c == nil {
		return time.Now
	}
	return c
}

// isWakeup reports whether h asks for a wake-up (see wakeupValue).
func isWakeup(h map[string]string) bool {
	v, ok := header(h, HeaderWakeup)
	if !ok {
		return false
	}
	wake, known := wakeupValue(v)
	return wake && known
}

// header looks a request header up. The schema asks for lower-case names;
// accept what a careless frontend sends rather than silently lose it.
func header(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func dropReason(err error) string {
	switch {
	case errors.Is(err, actions.ErrQueueFull):
		return "queue_full"
	case errors.Is(err, actions.ErrExpired):
		return "expired"
	case errors.Is(err, actions.ErrClosed):
		return "closed"
	case errors.Is(err, actions.ErrBudget):
		return "budget"
	}
	return "error"
}
