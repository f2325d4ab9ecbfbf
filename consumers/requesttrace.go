package consumers

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/observe/metrics"
)

// RequestTraceKind names the request-trace consumer's dead-letter subject
// and counters (metrics.Families.Trigger); it is
// requesttrace.DeadLetterKind.
const RequestTraceKind = "request_trace"

// DefaultRequestTraceDurable is the durable consumer the members of a
// group share on Dynamo's request-trace records: each record is acted on
// once, as each response event is.
const DefaultRequestTraceDurable = "hintstream-request-trace"

// RequestTraceConsumer consumes Dynamo's request-trace records (package
// requesttrace) for the decisions and the agent tracker, with the
// triggers' middleware: a record that can never be processed is counted
// by its reason, dead-lettered and terminated.
type RequestTraceConsumer struct{ trigger }

// NewRequestTraceConsumer wires a consumer (cfg.Durable default
// DefaultRequestTraceDurable); Start begins consuming.
func NewRequestTraceConsumer(js jetstream.JetStream, cfg TriggerConfig, decide Decide, dlq *DeadLetter,
	counters *metrics.Families, log *slog.Logger) *RequestTraceConsumer {
	return &RequestTraceConsumer{newTrigger(js, cfg, RequestTraceKind, DefaultRequestTraceDurable, decide, dlq, counters, log)}
}

// Run starts the consumer if Start has not, and consumes until ctx is
// cancelled; then it stops, finishing the message in hand.
func (c *RequestTraceConsumer) Run(ctx context.Context) error {
	return c.d.run(ctx, func() error { return c.Start(ctx) })
}
