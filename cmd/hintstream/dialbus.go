package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// dialBus connects a sidecar command (bridge, demo, register) to the bus
// named by --nats-url, retrying until --connect-timeout as run does, and
// opens its JetStream context. The caller closes the connection.
func dialBus(ctx context.Context, cfg natsconn.Config, url string, log *slog.Logger, timeout time.Duration) (*nats.Conn, jetstream.JetStream, error) {
	cfg.URL, cfg.Logger, cfg.ConnectTimeout = url, log, timeout
	nc, err := natsconn.Dial(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
