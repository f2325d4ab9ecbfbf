package service

import (
	"context"
	"flag"
	"strings"

	"github.com/hintstream/hintstream/ingest/bridge"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/cmdline"
)

// registerEventPlaneFlags registers run's --dynamo-zmq and
// --dynamo-zmq-broker: the bridge of Dynamo's ZMQ event plane, in the
// service rather than as `hintstream bridge --dynamo-zmq`.
func (c *Config) registerEventPlaneFlags(fs *flag.FlagSet) {
	fs.Func("dynamo-zmq", "bridge Dynamo's ZMQ event plane (DYN_EVENT_PLANE=zmq, its default) in this process: "+
		"a publisher's endpoint, e.g. tcp://10.0.0.7:41234 (may be given several times, or comma-separated; "+
		"as hintstream bridge --dynamo-zmq, with --dynamo-namespace/--dynamo-component)", func(v string) error {
		c.DynamoZMQ = append(c.DynamoZMQ, cmdline.List(v)...)
		return nil
	})
	fs.BoolVar(&c.DynamoZMQBroker, "dynamo-zmq-broker", false, "the --dynamo-zmq endpoints are a ZMQ broker's XPUB side, not publishers")
}

// bridgeZMQ runs the ZMQ event-plane bridge when --dynamo-zmq is
// given. It stops with the KV-event and load consumers: what it stored
// last is still read before they end. Members of a consumer group given
// the same endpoints each bridge them, and JetStream keeps each envelope
// once (its Nats-Msg-Id).
func (s *Service) bridgeZMQ(context.Context, *starting) error {
	if len(s.cfg.DynamoZMQ) == 0 {
		return nil
	}
	scope := s.cfg.DynamoScope
	if scope.Namespace == "" {
		scope.Namespace = eventplane.DefaultNamespace
	}
	if scope.Component == "" {
		scope.Component = eventplane.DefaultComponent
	}
	cfg := bridge.EventPlaneConfig{Endpoints: s.cfg.DynamoZMQ, Broker: s.cfg.DynamoZMQBroker,
		Scope: scope, DeadLetter: s.cfg.DeadLetterPrefix + ".event_plane"}
	if err := cfg.Validate(); err != nil {
		return err
	}
	b := bridge.NewEventPlane(s.js, cfg, bridge.WithLogger(s.log))
	s.lc.run(stageState, "dynamo event-plane bridge", func(ctx context.Context) error {
		err := b.Run(ctx)
		s.log.Info("Dynamo event-plane bridge stopped", "stats", b.Stats(), "malformed_by_reason", b.MalformedByReason(),
			"endpoints", strings.Join(s.cfg.DynamoZMQ, ","))
		return err
	})
	return nil
}
