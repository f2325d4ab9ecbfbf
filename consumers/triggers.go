package consumers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/nats-io/nats.go/jetstream"
)

// Decide is a trigger event's decisions (engine.Engine.Request or
// .Response): the consumer hands over the message and settles it by the
// Outcome.
type Decide func(ctx context.Context, d engine.Delivery, m engine.Message) engine.Outcome

// Apply is a load report's decisions (engine.Engine.Load).
type Apply func(m engine.Message) error

// MessageOf is what the decisions are given of msg: subject, headers and
// bytes (decoded by package engine, as a replay's are).
func MessageOf(msg jetstream.Msg) engine.Message {
	return engine.Message{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()}
}

// ApplyMessages is the ApplyFunc of a state consumer whose messages go to
// apply.
func ApplyMessages(apply Apply) ApplyFunc {
	return func(msg jetstream.Msg) error { return apply(MessageOf(msg)) }
}

// TriggerConfig configures a RequestConsumer or a ResponseConsumer.
type TriggerConfig struct {
	Stream  string   // stream holding the events (required)
	Durable string   // durable consumer name; default DefaultRequestsDurable or DefaultResponsesDurable
	Filter  []string // subjects; default the stream's own
	// DeliverNew starts a newly created durable at the stream's end rather
	// than its beginning: old wake-ups can only make expired hints.
	DeliverNew bool
	// MaxAckPending bounds messages in flight; default DefaultMaxAckPending.
	MaxAckPending int
	// AckWait is the redelivery timeout; default DefaultAckWait.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one message; then it is copied to
	// the dead-letter subject. Default DefaultMaxDeliver; Unbounded: no bound.
	MaxDeliver int
}

// RequestConfig configures a RequestConsumer.
type RequestConfig = TriggerConfig

// ResponseConfig configures a ResponseConsumer.
type ResponseConfig = TriggerConfig

// trigger is a durable consumer whose messages are decided on and
// settled by the Outcome.
type trigger struct {
	decide   Decide
	counters *metrics.Families
	log      *slog.Logger
	d        durable
	rej      rejecter
	// handler is decideOn wrapped in the middleware (Start composes it).
	handler Handler
}

func newTrigger(js jetstream.JetStream, cfg TriggerConfig, kind, defaultDurable string, decide Decide,
	dlq *DeadLetter, counters *metrics.Families, log *slog.Logger) trigger {
	if cfg.Durable == "" {
		cfg.Durable = defaultDurable
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("consumer", cfg.Durable)
	return trigger{decide: decide, counters: counters, log: log,
		d: durable{js: js, stream: cfg.Stream, name: cfg.Durable, filter: cfg.Filter, deliverNew: cfg.DeliverNew,
			ackWait: cfg.AckWait, maxAckPending: cfg.MaxAckPending, maxDeliver: cfg.MaxDeliver, log: log,
			dlq: dlq, dlqKind: kind, counters: counters},
		rej: rejecter{kind: kind, dlq: dlq, counters: counters, log: log}}
}

// decideOn is the trigger's Handler: it hands the message to the
// decisions and returns their Outcome. The decisions run under the
// consumer's context (cancelled once the consumer has stopped); their
// store operations are bounded by their own timeouts
// (streams.DefaultOpTimeout).
func (t *trigger) decideOn(msg jetstream.Msg) engine.Outcome {
	d := deliveryOf(msg, func(bool) { ack(msg, t.counters, t.rej.kind, t.log) })
	return t.decide(t.d.ctx, d, MessageOf(msg))
}

// handle is the JetStream side: the handler, wrapped in its middleware,
// returns the Outcome and handle settles the message by it.
func (t *trigger) handle(msg jetstream.Msg) { settle(msg, t.handler(msg), &t.rej) }

// Start creates (or attaches to) the durable consumer and consumes until
// Stop.
func (t *trigger) Start(ctx context.Context) error {
	t.handler = t.rej.deadLettering(t.decideOn)
	return t.d.start(ctx, t.handle, &t.rej)
}

// Stop stops fetching and waits until the message in hand is finished.
func (t *trigger) Stop() { t.d.stop() }

// RequestConsumer consumes request events for the decisions (with
// engine.Engine: a kv.prefetch for every wake-up, and with pins on, every
// request indexed and a session's pin slot released on its next turn).
type RequestConsumer struct{ trigger }

// NewRequestConsumer wires a consumer; Start begins consuming.
func NewRequestConsumer(js jetstream.JetStream, cfg RequestConfig, decide Decide, dlq *DeadLetter,
	counters *metrics.Families, log *slog.Logger) *RequestConsumer {
	return &RequestConsumer{newTrigger(js, cfg, "requests", DefaultRequestsDurable, decide, dlq, counters, log)}
}

// ResponseConsumer consumes response events for the decisions (with
// engine.Engine: a kv.pin for every tool call).
type ResponseConsumer struct{ trigger }

// NewResponseConsumer wires a consumer; Start begins consuming.
func NewResponseConsumer(js jetstream.JetStream, cfg ResponseConfig, decide Decide, dlq *DeadLetter,
	counters *metrics.Families, log *slog.Logger) *ResponseConsumer {
	return &ResponseConsumer{newTrigger(js, cfg, "responses", DefaultResponsesDurable, decide, dlq, counters, log)}
}
