package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// TestWakeupAsNATSHeader is `nats pub -H x-dynamo-experimental-wakeup:1`:
// a frontend that forwards the HTTP header as a NATS message header, not
// in the body's headers map, still gets its hint; a near-miss header name
// is counted as requests.header_unrecognised, not as plain.
func TestWakeupAsNATSHeader(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	sink := workerSink(t, ctx, js, 1)
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	p.waitLine(t, 30*time.Second, "hintstream running")

	pub := func(id, hname string) {
		b, err := json.Marshal(schemas.RequestEvent{RequestID: id, SessionID: "s-" + id, Model: model,
			TokenIDs: seq(100, 40), ReceivedAtMs: time.Now().UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(streams.RequestSubject(model))
		m.Data = b
		m.Header.Set(hname, "1") // nats pub -H NAME:1
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	pub("almost", "x-dynamo-wakeup")
	pub("by-header", "x-dynamo-experimental-wakeup")
	natstest.Eventually(t, 5*time.Second, func() bool { return sink.has("by-header") }, "prefetch for the NATS-header wake-up")
	consumerSettledFor(t, ctx, js, "hintstream-requests", 10*time.Second)
	if sink.has("almost") {
		t.Fatal("a near-miss header name made a hint")
	}
	p.stop(t)
	c := finalCounters(t, p)
	for name, want := range map[string]float64{"hintstream_requests_wakeup_total": 1, "hintstream_requests_header_unrecognised_total": 1, "hintstream_requests_plain_total": 0} {
		if c[name] != want {
			t.Errorf("counter %s = %v, want %v", name, c[name], want)
		}
	}
}
