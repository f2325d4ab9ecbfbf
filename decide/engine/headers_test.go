package engine

import (
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

func TestHeaderNearMisses(t *testing.T) {
	for _, c := range []struct {
		name, value string
		odd         bool
	}{
		{schemas.HeaderWakeup, "1", false}, {schemas.HeaderWakeup, "", false}, {schemas.HeaderWakeup, "off", false},
		{"X-Dynamo-Experimental-Wakeup", "TRUE", false},
		{schemas.HeaderWakeup, "please", true}, {schemas.HeaderWakeup, "2", true},
		{"x-dynamo-wakeup", "1", true}, {"x-dynamo-experimental-wake-up", "1", true},
		{"X_DYNAMO_EXPERIMENTAL_WAKEUP", "1", true}, {"x-dynamo-experimental-wakeup ", "1", true},
		{schemas.HeaderSimToolCall, "4000", false}, {schemas.HeaderSimToolCall, "search", false}, {schemas.HeaderSimToolCall, "0", false},
		{schemas.HeaderSimToolCall, "-5", true}, {schemas.HeaderSimToolCall, "1.5", true}, {schemas.HeaderSimToolCall, "a b", true},
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
	if v, _ := schemas.LookupHeader(req.Headers, schemas.HeaderSimToolCall); v != "2500" {
		t.Errorf("sim-tool-call from the NATS header = %q, want 2500", v)
	}
	empty := &schemas.RequestEvent{}
	mergeNATSHeaders(empty, map[string][]string{"X-Dynamo-Experimental-Wakeup": {"yes"}})
	if !isWakeup(empty.Headers) {
		t.Error("wake-up only as a NATS header (mixed case) not recognised")
	}
}

func TestWakeupHeaderDetection(t *testing.T) {
	for h, want := range map[string]bool{"1": true, "true": true, "": true, "0": false, "false": false, "OFF": false} {
		if got := isWakeup(map[string]string{schemas.HeaderWakeup: h}); got != want {
			t.Errorf("value %q: %v, want %v", h, got, want)
		}
	}
	if !isWakeup(map[string]string{"X-Dynamo-Experimental-Wakeup": "1"}) {
		t.Error("mixed-case header name not recognised")
	}
	if isWakeup(map[string]string{"x-other": "1"}) || isWakeup(nil) {
		t.Error("wake-up without the header")
	}
}
