package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
)

// TestIntegrationKit walks the README's "Integrate it" path with the
// shipped pieces only: `hintstream sink` stands in for the worker's
// scheduler, `hintstream register` registers it, a client.Publisher is
// the frontend; the sink prints the prefetch as one JSON line.
func TestIntegrationKit(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	sink := start(t, "sink", "--bind", ep)
	sink.waitLine(t, 10*time.Second, "sink listening")
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	run.waitLine(t, 30*time.Second, "hintstream running")
	start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "9", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", ep, "--interval", "1s")
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

	pub, err := client.NewPublisher(js, client.WithFormat(client.Msgpack))
	if err != nil {
		t.Fatal(err)
	}
	ev := wake("kit-1", "s-kit", seq(7, 50))
	if err := pub.PublishRequest(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	line := sink.waitLine(t, 10*time.Second, `"kit-1"`)
	var got struct {
		Endpoint   string `json:"endpoint"`
		MessageID  string `json:"message_id"`
		ActionType string `json:"action_type"`
		Payload    struct {
			RequestID   string   `json:"request_id"`
			TokenIDs    []uint32 `json:"token_ids"`
			ExpiresAtMs int64    `json:"expires_at_ms"`
		}
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("sink line %q: %v", line, err)
	}
	if got.ActionType != "kv.prefetch" || got.Payload.RequestID != "kit-1" || len(got.Payload.TokenIDs) != 50 ||
		got.Endpoint != ep || !strings.HasPrefix(got.MessageID, "wake-") || got.Payload.ExpiresAtMs == 0 {
		t.Fatalf("sink printed %+v", got)
	}
}
