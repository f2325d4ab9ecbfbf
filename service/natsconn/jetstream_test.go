package natsconn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/service/natsconn"
)

// firstJSCall makes the call start-up makes first, and fails the way it
// fails without JetStream.
func firstJSCall(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	t.Helper()
	nc, err := nats.Connect(url, append(fastFail, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = js.Stream(ctx, "LLM_REQUESTS")
	return nc, js, err
}

func TestExplainJetStreamServerWithout(t *testing.T) {
	url := startServer(t, func(o *server.Options) { o.JetStream = false; o.ServerName = "plain-nats" })
	nc, js, err := firstJSCall(t, url)
	if err == nil {
		t.Fatal("stream lookup without JetStream succeeded")
	}
	got := natsconn.ExplainJetStream(context.Background(), nc, js, err)
	if !errors.Is(got, natsconn.ErrNoJetStream) {
		t.Fatalf("got %v, want ErrNoJetStream", got)
	}
	msg := got.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, `"plain-nats"`) || !strings.Contains(msg, strings.TrimPrefix(url, "nats://")) ||
		!strings.Contains(msg, "JetStream is not enabled") {
		t.Fatalf("message %q should be one line naming the server and saying JetStream is off", msg)
	}
}

func TestExplainJetStreamAccountWithout(t *testing.T) {
	url := startServer(t, func(o *server.Options) {
		plain := server.NewAccount("PLAIN") // no JetStream limits: JetStream off for it
		o.Accounts = []*server.Account{plain}
		o.Users = []*server.User{{Username: "u", Password: "p", Account: plain}}
	})
	nc, js, err := firstJSCall(t, url, nats.UserInfo("u", "p"))
	if err == nil {
		t.Fatal("stream lookup in an account without JetStream succeeded")
	}
	got := natsconn.ExplainJetStream(context.Background(), nc, js, err)
	if !errors.Is(got, natsconn.ErrNoJetStream) || !strings.Contains(got.Error(), "account") {
		t.Fatalf("got %v, want ErrNoJetStream for the account", got)
	}
}

func TestExplainJetStreamLeavesOtherErrors(t *testing.T) {
	url := startServer(t, nil)
	nc, js, err := firstJSCall(t, url)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("lookup of a missing stream: %v", err)
	}
	if got := natsconn.ExplainJetStream(context.Background(), nc, js, err); got != err {
		t.Fatalf("got %v, want the original %v", got, err)
	}
	if natsconn.ExplainJetStream(context.Background(), nc, js, nil) != nil {
		t.Fatal("nil error explained as an error")
	}
}
