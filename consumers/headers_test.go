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

func TestHeaderNearMisses(t *testing.T) {
	for _, c := range []struct {
		name, value string
		odd         bool
	}{
		{HeaderWakeup, "1", false}, {HeaderWakeup, "", false}, {HeaderWakeup, "off", false},
		{"X-Dynamo-Experimental-Wakeup", "TRUE", false},
		{HeaderWakeup, "please", true}, {HeaderWakeup, "2", true},
		{"x-dynamo-wakeup", "1", true}, {"x-dynamo-experimental-wake-up", "1", true},
		{"X_DYNAMO_EXPERIMENTAL_WAKEUP", "1", true}, {"x-dynamo-experimental-wakeup ", "1", true},
		{HeaderSimToolCall, "4000", false}, {HeaderSimToolCall, "search", false}, {HeaderSimToolCall, "0", false},
		{HeaderSimToolCall, "-5", true}, {HeaderSimToolCall, "1.5", true}, {HeaderSimToolCall, "a b", true},
		{"x-dynamo-sim-tool-call", "1", true}, {"x-dynamo-tool-call", "1", true},
		{"content-type", "application/json", false}, {"x-request-id", "1", false}, {"Nats-Msg-Id", "r", false},
	} {
		if got := headerUnrecognised(map[string]string{c.name: c.value}, nil); got != c.odd {
			t.Errorf("body %q=%q: unrecognised %v, want %v", c.name, c.value, got, c.odd)
		}
		if got := headerUnrecognised(nil, map[string][]string{c.name: {c.value}}); got != c.odd {
			t.Errorf("NATS %q=%q: unrecognised %v, want %v", c.name, c.value, got, c.odd)
		}
	}
}

func TestMergeNATSHeadersBodyWins(t *testing.T) {
	req := &schemas.RequestEvent{Headers: map[string]string{"X-Dynamo-Experimental-Wakeup": "0"}}
	mergeNATSHeaders(req, map[string][]string{"x-dynamo-experimental-wakeup": {"1"},
		"X-DYNAMO-EXPERIMENTAL-SIM-TOOL-CALL": {"2500"}})
	if isWakeup(req.Headers) {
		t.Error("the NATS header overrode the body's wake-up value")
	}
	if v, _ := header(req.Headers, HeaderSimToolCall); v != "2500" {
		t.Errorf("sim-tool-call from the NATS header = %q, want 2500", v)
	}
	empty := &schemas.RequestEvent{}
	mergeNATSHeaders(empty, map[string][]string{"X-Dynamo-Experimental-Wakeup": {"yes"}})
	if !isWakeup(empty.Headers) {
		t.Error("wake-up only as a NATS header (mixed case) not recognised")
	}
}

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
	send("odd-value", nil, map[string]string{HeaderWakeup: "please"})
	send("body-says-no", nats.Header{HeaderWakeup: {"1"}}, map[string]string{HeaderWakeup: "0"})
	send("nats-header", nats.Header{"X-Dynamo-Experimental-Wakeup": {"1"}}, nil)
	expectHint(t, f.hints, "nats-header") // the three before it made none
	consumerSettled(t, f.js)
	for name, want := range map[string]uint64{
		"requests.header_unrecognised": 2, "requests.plain": 1, "requests.wakeup": 1,
	} {
		if got := metricstest.Get(f.counters, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
