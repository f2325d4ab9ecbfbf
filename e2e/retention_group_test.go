package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// retainPins are the retention planner's kv.pin payloads the peer
// decoded (slots "retain:<band>:<shard>").
func retainPins(ms []pypeer.Received) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		acts, _ := m.Envelope["actions"].([]any)
		for _, a := range acts {
			am := a.(map[string]any)
			if pl, _ := am["payload"].(map[string]any); am["action_type"] == "kv.pin" {
				if slot, _ := pl["slot"].(string); strings.HasPrefix(slot, "retain:") {
					out = append(out, pl)
				}
			}
		}
	}
	return out
}

// TestRetentionGroupLeastPrivilege: two `hintstream run` members with the
// retention planner, as the shipped least-privilege user: the first takes
// the planner lock, the second follows it; the leader's retention pins
// reach an independent (Python, msgspec-strict) pin socket; when the
// leader stops, the follower takes over and pins; no refusal is logged.
func TestRetentionGroupLeastPrivilege(t *testing.T) {
	s := privilegeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	pinSink := pypeer.StartSink(t, 1)
	env := []string{"HINTSTREAM_NATS_USER=hintstream"}
	member := func(name string) *proc {
		p := startEnv(t, env, "run", "--nats-url", s.ClientURL(), "--log-format", "json",
			"--pin-endpoint", pinSink.Endpoints()[0], "--l3-pin-budget", "1000000000000", "--retention-interval", "1s",
			"--retention-lock-ttl", "2s", "--retention-member", name)
		p.waitLine(t, 30*time.Second, "hintstream running")
		return p
	}
	a := member("a")
	if l := a.waitLine(t, 5*time.Second, "retention planner group joined"); !strings.Contains(l, `"leading":true`) {
		t.Fatalf("the first member does not lead: %s", l)
	}
	b := member("b")
	if l := b.waitLine(t, 5*time.Second, "retention planner group joined"); !strings.Contains(l, `"leading":false`) ||
		!strings.Contains(l, `"leader":"a"`) {
		t.Fatalf("the second member does not follow a: %s", l)
	}

	wnc, _ := userConn(t, s, "worker", make(chan error, 16))
	_, fjs := userConn(t, s, "frontend", make(chan error, 16))
	layout := sglangVector(t, "mha-tp2-page16").Layout
	if err := registry.Ask(ctx, wnc, "", 1, &schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:1"}, ObjectLayout: &layout}, time.Minute); err != nil {
		t.Fatalf("worker registers through hintstream: %v", err)
	}
	a.waitLine(t, 10*time.Second, "worker joined")
	b.waitLine(t, 10*time.Second, "worker joined")
	base := time.Now().Add(-time.Minute).UnixMilli()
	for i := range 12 {
		body, _ := json.Marshal(schemas.RequestEvent{RequestID: "rg-" + strconv.Itoa(i), SessionID: "s" + strconv.Itoa(i%3),
			Model: model, TokenIDs: seq(uint32(1000*(i%3)), 64+16*(i/3)), ReceivedAtMs: base + int64(i)*400})
		if _, err := fjs.Publish(ctx, streams.RequestSubject(model), body); err != nil {
			t.Fatal(err)
		}
	}
	pinSink.WaitFor(t, 20*time.Second, func(ms []pypeer.Received) bool { return len(retainPins(ms)) > 0 },
		"the leader's retention pins")
	for _, m := range pinSink.Messages() {
		if !m.OK {
			t.Fatalf("the pin socket refused a message: %s", m.Error)
		}
	}
	before := len(retainPins(pinSink.Messages()))
	a.stop(t)
	b.waitLine(t, 5*time.Second, "retention planner leads the group")
	pinSink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(retainPins(ms)) > before },
		"the new leader's retention pins")
	b.stop(t)
	for _, p := range []*proc{a, b} {
		for _, l := range p.lines(&p.errs) {
			if strings.Contains(strings.ToLower(l), "permission") {
				t.Errorf("a member met a refusal under its least-privilege user: %s", l)
			}
		}
	}
}
