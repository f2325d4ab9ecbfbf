package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"

	"github.com/hintstream/hintstream/ingest/bridge"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// eventPlaneBridgeFlags are bridge's flags for Dynamo's ZMQ event plane.
type eventPlaneBridgeFlags struct {
	endpoints repeated
	broker    *bool
	scope     eventplane.Scope
}

func registerEventPlaneBridgeFlags(fs *flag.FlagSet) *eventPlaneBridgeFlags {
	f := &eventPlaneBridgeFlags{}
	fs.Var(&f.endpoints, "dynamo-zmq", "a Dynamo event publisher's ZMQ endpoint (DYN_EVENT_PLANE=zmq, Dynamo's default): "+
		"each worker's KV-event and load publishers and each router's bind one, e.g. tcp://10.0.0.7:41234 "+
		"(may be given several times, or comma-separated; see docs/kv-events.md for finding them)")
	f.broker = fs.Bool("dynamo-zmq-broker", false, "the --dynamo-zmq endpoints are a ZMQ broker's XPUB side "+
		"(Dynamo with DYN_ZMQ_BROKER_URL xpub=...), not publishers")
	f.scope.RegisterFlags(fs)
	return f
}

func (f *eventPlaneBridgeFlags) given() bool { return len(f.endpoints) > 0 }

// runEventPlaneBridge ensures streams for the scope's subjects (unless
// some stream captures them already) and republishes Dynamo's ZMQ event
// plane until ctx ends.
func runEventPlaneBridge(ctx context.Context, js jetstream.JetStream, f *eventPlaneBridgeFlags, kv streams.Config,
	update bool, opts []bridge.Option, log *slog.Logger) error {
	scope := f.scope
	if scope.Namespace == "" {
		scope.Namespace = eventplane.DefaultNamespace
	}
	if scope.Component == "" {
		scope.Component = eventplane.DefaultComponent
	}
	set := streams.DefaultSet()
	set.KVEvents = kv
	set = scope.ApplyGiven(set)
	byTopic := map[string]streams.Config{eventplane.TopicKVEvents: set.KVEvents, eventplane.TopicKVMetrics: set.Load,
		eventplane.TopicActiveSequences: set.Requests}
	need := map[string]streams.Config{bridge.DefaultEventPlaneDeadLetter: set.DeadLetter}
	for _, topic := range bridge.EventPlaneTopics(scope) {
		need[scope.Subject(topic)] = byTopic[topic]
	}
	for subject, cfg := range need {
		_, err := js.StreamNameBySubject(ctx, subject)
		if err == nil {
			continue // an operator's stream, or run's: attached as it is
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		if _, _, err := streams.Ensure(ctx, js, cfg, streams.WithUpdate(update), streams.WithLogger(log)); err != nil {
			return err
		}
	}
	b := bridge.NewEventPlane(js, bridge.EventPlaneConfig{Endpoints: cmdline.List(f.endpoints.String()),
		Broker: *f.broker, Scope: scope}, opts...)
	err := b.Run(ctx)
	log.Info("Dynamo event-plane bridge stopped", "stats", b.Stats(), "malformed_by_reason", b.MalformedByReason())
	return err
}
