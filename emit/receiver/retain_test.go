package receiver

import (
	"errors"
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
	for name, b := range map[string][]byte{
		"no ttl":       envelope("kv.retain", retainPayload(func(m map[string]any) { delete(m, "ttl_ms") })),
		"zero ttl":     envelope("kv.retain", retainPayload(func(m map[string]any) { m["ttl_ms"] = int64(0) })),
		"ttl past 24h": envelope("kv.retain", retainPayload(func(m map[string]any) { m["ttl_ms"] = actions.MaxPinTTL.Milliseconds() + 1 })),
		"no expiry":    envelope("kv.retain", retainPayload(func(m map[string]any) { delete(m, "expires_at_ms") })),
		"empty claim":  envelope("kv.retain", retainPayload(func(m map[string]any) { m["claim_id"] = "" })),
		"long claim":   envelope("kv.retain", retainPayload(func(m map[string]any) { m["claim_id"] = strings.Repeat("x", 257) })),
		"bin claim":    envelope("kv.retain", retainPayload(func(m map[string]any) { m["claim_id"] = []byte("c") })),
		"priority 101": envelope("kv.retain", retainPayload(func(m map[string]any) { m["priority"] = int64(101) })),
		"negative rev": envelope("kv.retain", retainPayload(func(m map[string]any) { m["revision"] = int64(-1) })),
		"token 2^32":   envelope("kv.retain", retainPayload(func(m map[string]any) { m["token_ids"] = []any{int64(1 << 32)} })),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}

// FuzzDecodeRetain: any kv.retain payload decodes with its fields in
// range, or is rejected with ErrInvalid; never a panic.
func FuzzDecodeRetain(f *testing.F) {
	f.Add(envelope("kv.retain", retainPayload(func(map[string]any) {})))
	f.Add(envelope("kv.retain", []byte{0x80}))
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
				t.Fatalf("kv.retain@1.0 accepted as %+v", r)
			}
		}
	})
}
