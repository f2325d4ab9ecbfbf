package cluster

import (
	"reflect"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// checkDecodeNoTokens fails unless DecodeNoTokens(b) is Decode(b) with
// the token ids dropped: the same fields, an error exactly when Decode
// has one.
func checkDecodeNoTokens(t *testing.T, b []byte) {
	t.Helper()
	want := Decode(b)
	for i := range want.Prefetches {
		want.Prefetches[i].TokenIDs = nil
	}
	got := DecodeNoTokens(b)
	if (got.Err != nil) != (want.Err != nil) {
		t.Fatalf("err %v, Decode's %v", got.Err, want.Err)
	}
	got.Err, want.Err = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nDecode: %+v", got, want)
	}
}

// hintBodies are envelopes as the engine writes them: a prefetch of a
// long prompt (tokens of every msgpack width), a pin, a release.
func hintBodies(t testing.TB) [][]byte {
	tokens := make([]uint32, 0, 4096)
	for i := range 4096 {
		tokens = append(tokens, uint32(i*i*977)%(1<<31)) // 0 … 2^31: fixint to uint32
	}
	pf, _, err := actions.AppendPrefetch(nil, actions.Prefetch{RequestID: "wake-7", SessionID: "s", Model: "m",
		TokenIDs: tokens, ExpiresAt: time.UnixMilli(1 << 40), WorkerID: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := [][]byte{pf}
	for _, ttl := range []time.Duration{time.Minute, 0} {
		env, err := actions.NewPinEnvelope(actions.Pin{Trigger: "r1", Slot: "request:r1", Keys: []string{"a", "b"},
			TTL: ttl, Priority: 10, Tokens: 1024})
		if err != nil {
			t.Fatal(err)
		}
		b, err := env.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestDecodeNoTokensIsDecodeWithoutTokens(t *testing.T) {
	bodies := hintBodies(t)
	for _, b := range bodies {
		checkDecodeNoTokens(t, b)
		if h := DecodeNoTokens(b); h.Err != nil || len(h.Prefetches)+len(h.Pins) != 1 {
			t.Fatalf("%+v: want one action, no error", h)
		}
	}
	pf := DecodeNoTokens(bodies[0]).Prefetches[0]
	if pf.RequestID != "wake-7" || pf.ExpiresAtMs != 1<<40 || pf.WorkerID != 3 || pf.TokenIDs != nil {
		t.Fatalf("prefetch %+v", pf)
	}
	// Every cut of the prefetch fails, as Decode does, and so does a
	// token past uint32, a nil payload and an unknown action.
	for n := 0; n < len(bodies[0]); n += 97 {
		checkDecodeNoTokens(t, bodies[0][:n])
	}
	raw := msgp.AppendMapHeader(nil, 2)
	raw = msgp.AppendString(raw, "request_id")
	raw = msgp.AppendString(raw, "wake-1")
	raw = msgp.AppendString(raw, "token_ids")
	raw = msgp.AppendArrayHeader(raw, 2)
	raw = msgp.AppendUint64(raw, 7)
	over := msgp.AppendUint64(raw, 1<<32)
	neg := msgp.AppendInt64(raw, -1)
	for _, payload := range [][]byte{over, neg, msgp.AppendNil(nil), msgp.AppendUint64(raw, 1<<31)} {
		for _, typ := range []string{actions.ActionPrefetch, actions.ActionPin, "kv.other"} {
			env := schemas.KvHintsEnvelope{MessageID: "m", Actions: []schemas.KvHintAction{{ActionType: typ, Payload: payload}}}
			b, err := env.MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			checkDecodeNoTokens(t, b)
		}
	}
	if h := DecodeNoTokens(bodies[0][:len(bodies[0])-1]); h.Err == nil {
		t.Fatal("a cut envelope decoded")
	}
}

func FuzzDecodeNoTokens(f *testing.F) {
	for _, b := range hintBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeNoTokens(t, b)
	})
}
