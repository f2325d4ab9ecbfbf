package receiver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/tinylib/msgp/msgp"
)

func retainPayload(mut func(m map[string]any)) []byte {
	m := map[string]any{"token_ids": []any{int64(1), int64(2)}, "ttl_ms": int64(60000), "priority": int64(20),
		"claim_id": "hintstream/s", "revision": int64(7), "expires_at_ms": int64(1_700_000_000_000), "session_id": "s"}
	mut(m)
	b, _ := msgp.AppendIntf(nil, m)
	return b
}

func TestDecodeRetain(t *testing.T) {
	body, _, err := actions.EncodeRetain(actions.Retain{Trigger: "t", SessionID: "s", TokenIDs: []uint32{5, 6, 7}, TTL: 2 * time.Second,
		Priority: 9, ClaimID: "hintstream/s", Revision: 3, ExpiresAt: time.UnixMilli(99)})
	if err != nil {
		t.Fatal(err)
	}
	env, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	r := env.Actions[0].Retain
	if r == nil || len(r.TokenIDs) != 3 || r.TTLMs != 2000 || r.Priority != 9 || r.ClaimID != "hintstream/s" || r.Revision != 3 || r.ExpiresAtMs != 99 {
		t.Fatalf("decoded %+v", r)
	}
	if a := env.Actions[0]; a.Type != "hintstream.retain" || a.Legacy {
		t.Fatalf("action type %q legacy %v, want hintstream.retain", a.Type, a.Legacy)
	}
	for name, b := range map[string][]byte{
		"no ttl":       envelope(ActionRetain, retainPayload(func(m map[string]any) { delete(m, "ttl_ms") })),
		"zero ttl":     envelope(ActionRetain, retainPayload(func(m map[string]any) { m["ttl_ms"] = int64(0) })),
		"ttl past 24h": envelope(ActionRetain, retainPayload(func(m map[string]any) { m["ttl_ms"] = actions.MaxPinTTL.Milliseconds() + 1 })),
		"no expiry":    envelope(ActionRetain, retainPayload(func(m map[string]any) { delete(m, "expires_at_ms") })),
		"empty claim":  envelope(ActionRetain, retainPayload(func(m map[string]any) { m["claim_id"] = "" })),
		"long claim":   envelope(ActionRetain, retainPayload(func(m map[string]any) { m["claim_id"] = strings.Repeat("x", 257) })),
		"bin claim":    envelope(ActionRetain, retainPayload(func(m map[string]any) { m["claim_id"] = []byte("c") })),
		"priority 101": envelope(ActionRetain, retainPayload(func(m map[string]any) { m["priority"] = int64(101) })),
		"negative rev": envelope(ActionRetain, retainPayload(func(m map[string]any) { m["revision"] = int64(-1) })),
		"token 2^32":   envelope(ActionRetain, retainPayload(func(m map[string]any) { m["token_ids"] = []any{int64(1 << 32)} })),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}

// The retired name kv.retain@1.0 still decodes, for one release, as
// hintstream.retain marked Legacy; under either name a bad payload is
// refused alike; vLLM's own kv.retain@1.0 (scope, directives) is not
// taken for ours.
func TestDecodeLegacyRetain(t *testing.T) {
	env, err := Decode(envelope(LegacyActionRetain, retainPayload(func(map[string]any) {})))
	if err != nil {
		t.Fatal(err)
	}
	if a := env.Actions[0]; a.Type != ActionRetain || !a.Legacy || a.Retain == nil || a.Retain.Revision != 7 {
		t.Fatalf("legacy retain decoded as %+v", a)
	}
	bad := retainPayload(func(m map[string]any) { m["priority"] = int64(0) })
	if _, err := Decode(envelope(LegacyActionRetain, bad)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("legacy retain with priority 0: err %v", err)
	}
	vllm, _ := msgp.AppendIntf(nil, map[string]any{"scope": map[string]any{"request_id": "r"}, "directives": []any{}})
	if _, err := Decode(envelope(LegacyActionRetain, vllm)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("vLLM's kv.retain payload: err %v, want ErrInvalid (not ours)", err)
	}
}

// FuzzDecodeRetain: any hintstream.retain (or kv.retain) payload decodes with its fields in
// range, or is rejected with ErrInvalid; never a panic.
func FuzzDecodeRetain(f *testing.F) {
	f.Add(envelope(ActionRetain, retainPayload(func(map[string]any) {})))
	f.Add(envelope(ActionRetain, []byte{0x80}))
	f.Add(envelope(LegacyActionRetain, retainPayload(func(map[string]any) {})))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, a := range env.Actions {
			if a.Type != ActionRetain || a.Version != RetainVersion {
				continue
			}
			r := a.Retain
			if r == nil || r.TTLMs < 1 || r.Priority < 1 || r.Priority > 100 || r.ClaimID == "" || len(r.ClaimID) > 256 || r.Revision < 0 {
				t.Fatalf("hintstream.retain@1.0 accepted as %+v", r)
			}
		}
	})
}

// legacyRetain is a retain hint for trigger as the previous release sent
// it: the same envelope under the action type kv.retain.
func legacyRetain(t *testing.T, trigger string) []byte {
	t.Helper()
	body, _, err := actions.EncodeRetain(actions.Retain{Trigger: trigger, SessionID: "s", TokenIDs: []uint32{1, 2}, TTL: time.Minute,
		Priority: 5, ClaimID: "hintstream/s", ExpiresAt: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	legacy := bytes.Replace(body, msgp.AppendString(nil, ActionRetain), msgp.AppendString(nil, LegacyActionRetain), 1)
	if bytes.Equal(legacy, body) {
		t.Fatal("no action type replaced")
	}
	return legacy
}

// A receiver hands a kv.retain on as hintstream.retain, counts every one
// (legacy_action) and logs the first only.
func TestReceiverLegacyRetainCountedLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := &collector{}
	r, err := New("tcp://127.0.0.1:*", c.handle, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, id := range []string{"a", "b", "c"} {
		r.Handle(context.Background(), legacyRetain(t, id))
	}
	got := c.hints()
	if len(got) != 3 {
		t.Fatalf("%d hints handed on, want 3", len(got))
	}
	for _, h := range got {
		if h.Type != ActionRetain || h.Retain == nil {
			t.Fatalf("handed on as %q (%+v)", h.Type, h.Retain)
		}
	}
	if n := r.Counters().LegacyAction.Value(); n != 3 {
		t.Fatalf("legacy_action %d, want 3", n)
	}
	if n := r.Counters().Delivered.Value(ActionRetain); n != 3 {
		t.Fatalf("delivered{hintstream.retain} %d, want 3", n)
	}
	if n := strings.Count(logs.String(), "retired name"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
}
