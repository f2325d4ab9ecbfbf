package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoJetStream: the NATS server (or the account) has JetStream off.
// Without it every JetStream request ends in "no responders available
// for request", once per stream, and none of those lines says why.
var ErrNoJetStream = errors.New("JetStream is not enabled")

// diagnoseTimeout bounds the account-info request of ExplainJetStream.
const diagnoseTimeout = 2 * time.Second

// ExplainJetStream turns err, the failure of a first JetStream call, into
// one line naming the server when the reason is that JetStream is off
// there (ErrNoJetStream); otherwise it returns err unchanged. It asks the
// server only once something has failed, so a start-up that works makes
// no extra request, and a client not allowed $JS.API.INFO loses nothing.
func ExplainJetStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, err error) error {
	if err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	_, aerr := js.AccountInfo(ctx)
	switch {
	case errors.Is(aerr, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("%w for this account on NATS server %s: enable JetStream for the account (a jetstream block in its account config)", ErrNoJetStream, serverName(nc))
	case errors.Is(aerr, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("%w on NATS server %s: start it with JetStream (nats-server -js, or a jetstream {} block in its config)", ErrNoJetStream, serverName(nc))
	}
	return err
}

// serverName is the connected server's name and URL, for messages.
func serverName(nc *nats.Conn) string {
	url := nc.ConnectedUrlRedacted()
	if name := nc.ConnectedServerName(); name != "" {
		return fmt.Sprintf("%q at %s", name, url)
	}
	return url
}
