package consumers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
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
	MaxDeliver    int           // default 10, then dead-lettered; -1 unbounded
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
		cfg.Durable = "hintstream-responses"
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
func (c *ResponseConsumer) Start(ctx context.Context) error { return c.d.start(ctx, c.handle) }

// Stop stops fetching and waits until the message in hand is finished.
func (c *ResponseConsumer) Stop() { c.d.stop() }

// Handle processes one message as Start's consumer does; a replay calls
// it on history.
func (c *ResponseConsumer) Handle(msg jetstream.Msg) { c.handle(msg) }

func (c *ResponseConsumer) handle(msg jetstream.Msg) {
	c.counters.Inc("responses.received")
	err := c.cfg.Limits.CheckHeaders("response", msg.Headers())
	var resp *schemas.ResponseEvent
	if err == nil {
		resp, err = c.cfg.Limits.DecodeResponse(msg.Data(), msg.Headers().Get("Content-Type"))
	}
	if err != nil {
		c.rej.reject(msg, err)
		return
	}
	switch c.pins.onResponse(msg, resp, func(bool) { ack(msg, c.counters, "responses", c.log) }) {
	case pinRetry:
		_ = msg.NakWithDelay(c.cfg.RetryDelay)
	case pinDone:
		ack(msg, c.counters, "responses", c.log)
	case pinQueued:
		// acked by the sender once the pin has left
	}
}
