package consumers

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/observe/metrics"
)

// DefaultAgentEventsDurable is the durable consumer the members of a
// group share on the agent tool events: each event is acted on once.
const DefaultAgentEventsDurable = "hintstream-agent-events"

// AgentEventConsumer consumes agent tool events (package agentevents) for
// the agent tracker, shared by the group as the requests and responses
// are: exactly one member acts on each event.
type AgentEventConsumer struct{ trigger }

// NewAgentEventConsumer wires a consumer (cfg.Durable default
// DefaultAgentEventsDurable); Start begins consuming. kind names its
// dead-letter subject and counters.
func NewAgentEventConsumer(js jetstream.JetStream, cfg TriggerConfig, kind string, decide Decide, dlq *DeadLetter,
	counters *metrics.Families, log *slog.Logger) *AgentEventConsumer {
	return &AgentEventConsumer{newTrigger(js, cfg, kind, DefaultAgentEventsDurable, decide, dlq, counters, log)}
}

// Run starts the consumer if Start has not, and consumes until ctx is
// cancelled; then it stops, finishing the message in hand.
func (c *AgentEventConsumer) Run(ctx context.Context) error {
	return c.d.run(ctx, func() error { return c.Start(ctx) })
}
