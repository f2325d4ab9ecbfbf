package consumers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/hints"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ResponseConfig configures a ResponseConsumer.
type ResponseConfig struct {
	Stream  string   // stream holding response events (required)
	Durable string   // durable consumer name; default "hintstream-responses"
	Filter  []string // subjects; default the stream's own
	// DeliverNew starts a newly created durable at the stream's end.
	DeliverNew    bool
	MaxAckPending int           // default 1024
	AckWait       time.Duration // default 30s
	MaxDeliver    int           // default DefaultMaxDeliver, then dead-lettered; Unbounded: no bound
	// RetryDelay is how long a tool-call response whose request is not yet
	// indexed waits before it is tried again; default 500ms.
	RetryDelay time.Duration
	Limits     schemas.Limits
}

// ResponseConsumer consumes response events and sends a kv.pin for every
// tool call.
type ResponseConsumer struct {
	cfg      ResponseConfig
	pins     *Pinning
	counters *metrics.Counters
	log      *slog.Logger
	d        durable
	rej      rejecter
}

// NewResponseConsumer wires a consumer; Start begins consuming.
func NewResponseConsumer(js jetstream.JetStream, cfg ResponseConfig, pins *Pinning, dlq *DeadLetter,
	counters *metrics.Counters, log *slog.Logger) *ResponseConsumer {
	if cfg.Durable == "" {
		cfg.Durable = DefaultResponsesDurable
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 500 * time.Millisecond
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("consumer", cfg.Durable)
	return &ResponseConsumer{cfg: cfg, pins: pins, counters: counters, log: log,
		d: durable{js: js, stream: cfg.Stream, name: cfg.Durable, filter: cfg.Filter, deliverNew: cfg.DeliverNew,
			ackWait: cfg.AckWait, maxAckPending: cfg.MaxAckPending, maxDeliver: cfg.MaxDeliver, log: log,
			dlq: dlq, dlqKind: "responses", counters: counters},
		rej: rejecter{kind: "responses", dlq: dlq, counters: counters, log: log}}
}

// Start creates (or attaches to) the durable consumer and consumes until
// Stop.
func (c *ResponseConsumer) Start(ctx context.Context) error { return c.d.start(ctx, c.handle, &c.rej) }

// Stop stops fetching and waits until the message in hand is finished.
func (c *ResponseConsumer) Stop() { c.d.stop() }

// handle is the JetStream side: it decides on the message and acts on
// the Outcome.
func (c *ResponseConsumer) handle(msg jetstream.Msg) {
	d := deliveryOf(msg, func(bool) { ack(msg, c.counters, "responses", c.log) })
	settle(msg, c.Decide(d, msg.Data(), msg.Headers()), &c.rej)
}

// Decide decodes one response event and pins on a tool call, apart from
// how it arrived: the consumer settles its message by the Outcome, a
// replay calls it on history.
func (c *ResponseConsumer) Decide(d hints.Delivery, data []byte, hdr nats.Header) hints.Outcome {
	c.counters.Inc("responses.received")
	err := c.cfg.Limits.CheckHeaders("response", hdr)
	var resp *schemas.ResponseEvent
	if err == nil {
		resp, err = c.cfg.Limits.DecodeResponse(data, hdr.Get("Content-Type"))
	}
	if err != nil {
		return hints.Rejected(err)
	}
	return c.OnResponse(d, resp)
}

// OnResponse decides on a decoded response.
func (c *ResponseConsumer) OnResponse(d hints.Delivery, resp *schemas.ResponseEvent) hints.Outcome {
	switch c.pins.onResponse(d, resp) {
	case pinRetry:
		return hints.RetryAfter(c.cfg.RetryDelay, nil)
	case pinQueued:
		return hints.HeldUntilSent() // settled by the sender once the pin has left
	}
	return hints.Done()
}
