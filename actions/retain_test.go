package actions_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/pypeer"
)

func goodRetain() actions.Retain {
	return actions.Retain{Trigger: "turn-1", SessionID: "s-1", Model: "Qwen/Qwen3-8B", TokenIDs: []uint32{0, 1 << 31, 1<<32 - 1},
		DpRank: 1, TTL: 1500 * time.Millisecond, Priority: 42, ClaimID: "hintstream/s-1", Revision: 1_700_000_000_000,
		ExpiresAt: time.UnixMilli(1_700_000_001_000)}
}

// A retain sent through the pool is decoded by the independent Python
// peer (msgpack, strict about str and int) with every field intact.
func TestRetainDecodedByPythonPeer(t *testing.T) {
	sink := pypeer.StartSink(t, 1)
	body, id, err := actions.EncodeRetain(goodRetain())
	if err != nil {
		t.Fatal(err)
	}
	if err := newPool(t).Send(sink.Endpoints()[0], actions.Hint{MessageID: id, Body: body, Deadline: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, func(m []pypeer.Received) bool { return len(m) == 1 }, "retain received")
	m := sink.Messages()[0]
	if !m.OK {
		t.Fatalf("peer rejected the retain: %+v", m)
	}
	a := m.Envelope["actions"].([]any)[0].(map[string]any)
	if a["action_type"] != "hintstream.retain" || a["action_version"] != "1.0" || m.Envelope["message_id"] != id {
		t.Fatalf("envelope %v", m.Envelope)
	}
	p := a["payload"].(map[string]any)
	want := map[string]string{"request_id": "turn-1", "session_id": "s-1", "model": "Qwen/Qwen3-8B", "claim_id": "hintstream/s-1",
		"dp_rank": "1", "ttl_ms": "1500", "priority": "42", "revision": "1700000000000", "expires_at_ms": "1700000001000"}
	for k, v := range want {
		got := p[k]
		if n, ok := got.(json.Number); ok {
			got = n.String()
		}
		if got != v {
			t.Errorf("payload %s = %#v, want %s", k, p[k], v)
		}
	}
	ids := p["token_ids"].([]any)
	if len(ids) != 3 || ids[2].(json.Number).String() != "4294967295" {
		t.Errorf("token_ids %v", ids)
	}
}

func TestRetainValidates(t *testing.T) {
	for name, mut := range map[string]func(*actions.Retain){
		"no trigger":    func(r *actions.Retain) { r.Trigger = "" },
		"no tokens":     func(r *actions.Retain) { r.TokenIDs = nil },
		"zero ttl":      func(r *actions.Retain) { r.TTL = 0 },
		"ttl too long":  func(r *actions.Retain) { r.TTL = actions.MaxPinTTL + time.Second },
		"priority 0":    func(r *actions.Retain) { r.Priority = 0 },
		"priority 101":  func(r *actions.Retain) { r.Priority = 101 },
		"no claim":      func(r *actions.Retain) { r.ClaimID = "" },
		"long claim":    func(r *actions.Retain) { r.ClaimID = strings.Repeat("c", 257) },
		"negative rev":  func(r *actions.Retain) { r.Revision = -1 },
		"no expiry":     func(r *actions.Retain) { r.ExpiresAt = time.Time{} },
		"invalid utf-8": func(r *actions.Retain) { r.SessionID = "\xff" },
	} {
		r := goodRetain()
		mut(&r)
		if _, _, err := actions.EncodeRetain(r); !errors.Is(err, actions.ErrInvalidHint) {
			t.Errorf("%s: err %v, want ErrInvalidHint", name, err)
		}
	}
	a, b := actions.RetainMessageID("t", 1), actions.RetainMessageID("t", 2)
	if a == b || a != actions.RetainMessageID("t", 1) || !strings.HasPrefix(a, "retain-") || len(a) != 7+16 {
		t.Fatalf("message ids %q %q: want deterministic, distinct per revision", a, b)
	}
}
