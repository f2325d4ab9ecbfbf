package consumers

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"testing"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// TestNATSHeaderWakeupAndNearMiss runs the consumer on real JetStream
// messages: a wake-up given only as a NATS header makes a hint; a
// near-miss header name is counted as header_unrecognised, not plain.
func TestNATSHeaderWakeupAndNearMiss(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	subj := streams.RequestSubject("m")
	send := func(id string, hdr nats.Header, body map[string]string) {
		b, _ := json.Marshal(schemas.RequestEvent{RequestID: id, Model: "m", TokenIDs: []uint32{1, 2, 3},
			Headers: body, ReceivedAtMs: time.Now().UnixMilli()})
		m := &nats.Msg{Subject: subj, Data: b, Header: hdr}
		if _, err := f.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	send("near-miss", nats.Header{"X-Dynamo-Wakeup": {"1"}}, nil)
	send("odd-value", nil, map[string]string{schemas.HeaderWakeup: "please"})
	send("body-says-no", nats.Header{schemas.HeaderWakeup: {"1"}}, map[string]string{schemas.HeaderWakeup: "0"})
	send("nats-header", nats.Header{"X-Dynamo-Experimental-Wakeup": {"1"}}, nil)
	expectHint(t, f.hints, "nats-header") // the three before it made none
	consumerSettled(t, f.js)
	for name, want := range map[string]uint64{
		"hintstream_requests_header_unrecognised_total": 2, "hintstream_requests_plain_total": 1, "hintstream_requests_wakeup_total": 1,
	} {
		if got := metricstest.Get(f.counters, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
