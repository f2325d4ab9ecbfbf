package e2e

// Frontend-side helpers. Every request and response event the e2e tests
// publish goes through client.Publisher, as a real frontend's would:
// JSON, Nats-Msg-Id from the request id. Tests should publish with these
// (publishRequest, publishResponse, or newPublisher for a stream of
// events) rather than js.Publish. The exceptions publish what the client
// refuses to make (a malformed event) or test publishing itself across a
// NATS restart or a deleted stream.

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// newPublisher returns a Publisher on js; the test's end flushes it.
func newPublisher(t *testing.T, js jetstream.JetStream, opts ...client.Option) *client.Publisher {
	t.Helper()
	p, err := client.NewPublisher(js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(10*time.Second))
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// publishRequest publishes r and waits for JetStream's ack.
func publishRequest(t *testing.T, ctx context.Context, js jetstream.JetStream, r schemas.RequestEvent) {
	t.Helper()
	publishSync(t, ctx, js, func(p *client.Publisher) error { return p.PublishRequest(ctx, &r) })
}

// republishRequest is publishRequest without a Nats-Msg-Id: for a test
// that asks again with the same request id on purpose, which JetStream's
// duplicate window would otherwise drop.
func republishRequest(t *testing.T, ctx context.Context, js jetstream.JetStream, r schemas.RequestEvent) {
	t.Helper()
	publishSync(t, ctx, js, func(p *client.Publisher) error { return p.PublishRequest(ctx, &r) }, client.WithMsgID(false))
}

// publishResponse publishes r and waits for JetStream's ack.
func publishResponse(t *testing.T, ctx context.Context, js jetstream.JetStream, r schemas.ResponseEvent) {
	t.Helper()
	publishSync(t, ctx, js, func(p *client.Publisher) error { return p.PublishResponse(ctx, &r) })
}

func publishSync(t *testing.T, ctx context.Context, js jetstream.JetStream, publish func(*client.Publisher) error, opts ...client.Option) {
	t.Helper()
	p, err := client.NewPublisher(js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := publish(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// wakeEvent is wake(id, "s-"+id, prompt), received now, for a Publisher.
func wakeEvent(id string, prompt []uint32) *schemas.RequestEvent {
	ev := wake(id, "s-"+id, prompt)
	return &ev
}
