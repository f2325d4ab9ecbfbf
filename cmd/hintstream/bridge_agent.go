package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }

func (r *repeated) Set(s string) error {
	*r = append(*r, s)
	return nil
}

// agentBridgeFlags are bridge's flags for agent harnesses.
type agentBridgeFlags struct {
	endpoints repeated
	topic     *string
	stream    *string
}

func registerAgentBridgeFlags(fs *flag.FlagSet) *agentBridgeFlags {
	f := &agentBridgeFlags{}
	fs.Var(&f.endpoints, "agent-events", "an agent harness's tool-event PUB endpoint, e.g. tcp://harness:5590 (may be given several times; see docs/agents.md)")
	f.topic = fs.String("agent-events-topic", "", "ZMQ topic prefix to subscribe to on the agent harnesses")
	f.stream = fs.String("agent-events-stream", agentevents.DefaultStream, "stream of agent tool events (agent.events.>), created when absent")
	return f
}

// runAgentBridge ensures the agent-events and dead-letter streams and
// republishes harness records until ctx ends.
func runAgentBridge(ctx context.Context, js jetstream.JetStream, f *agentBridgeFlags, update bool, log *slog.Logger) error {
	cfg := agentevents.StreamConfig()
	cfg.Name = *f.stream
	for _, c := range []streams.Config{cfg, streams.DefaultSet().DeadLetter} {
		if _, _, err := streams.Ensure(ctx, js, c, streams.WithUpdate(update), streams.WithLogger(log)); err != nil {
			return err
		}
	}
	b := agentevents.New(js, agentevents.Config{Endpoints: f.endpoints, Topic: *f.topic, Log: log.With("component", "agent-bridge")})
	err := b.Run(ctx)
	log.Info("agent bridge stopped", "stats", b.Stats(), "malformed_by_reason", b.MalformedByReason())
	return err
}
