package actions_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/emit/receiver"
	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

func vectorsDir(t *testing.T) string { t.Helper(); return testvectors.Dir(t) }

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrefetchMessageID(t *testing.T) {
	// Expected values from Python's xxhash.xxh3_64_hexdigest.
	for id, want := range map[string]string{
		"req-1":           "wake-b37c3beeb68532d6",
		"":                "wake-2d06800538d394c2",
		"chatcmpl-9f1c2e": "wake-3105907ff2792152",
		"req-73":          "wake-0004f2e98bf656af", // leading zeros kept
	} {
		if got := actions.PrefetchMessageID(id); got != want {
			t.Errorf("PrefetchMessageID(%q) = %s, want %s", id, got, want)
		}
	}
}

// vectorPayload is the two-key payload of the shared vector, encoded by
// hand in the vector's key order.
type vectorPayload struct {
	RequestID string   `json:"request_id"`
	TokenIDs  []uint32 `json:"token_ids"`
}

func (p vectorPayload) appendMsg(b []byte) []byte {
	b = msgp.AppendMapHeader(b, 2)
	b = msgp.AppendString(b, "request_id")
	b = msgp.AppendString(b, p.RequestID)
	b = msgp.AppendString(b, "token_ids")
	b = msgp.AppendArrayHeader(b, uint32(len(p.TokenIDs)))
	for _, id := range p.TokenIDs {
		b = msgp.AppendUint32(b, id)
	}
	return b
}

func TestEncodeEnvelopeMatchesVector(t *testing.T) {
	var v struct {
		ProtocolVersion string `json:"protocol_version"`
		MessageID       string `json:"message_id"`
		Actions         []struct {
			ActionID      string        `json:"action_id"`
			ActionType    string        `json:"action_type"`
			ActionVersion string        `json:"action_version"`
			Payload       vectorPayload `json:"payload"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(readVector(t, "kv_hints_envelope.json"), &v); err != nil {
		t.Fatal(err)
	}
	env := &schemas.KvHintsEnvelope{ProtocolVersion: v.ProtocolVersion, MessageID: v.MessageID}
	for _, a := range v.Actions {
		env.Actions = append(env.Actions, schemas.KvHintAction{
			ActionID: a.ActionID, ActionType: a.ActionType, ActionVersion: a.ActionVersion,
			Payload: a.Payload.appendMsg(nil),
		})
	}
	got, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	want := readVector(t, "kv_hints_envelope.msgpack")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded envelope differs from the vector\n got %x\nwant %x", got, want)
	}
}

func TestDecodeEnvelopeVector(t *testing.T) {
	var env schemas.KvHintsEnvelope
	rest, err := env.UnmarshalMsg(readVector(t, "kv_hints_envelope.msgpack"))
	if err != nil || len(rest) != 0 {
		t.Fatalf("UnmarshalMsg: %v, %d bytes left", err, len(rest))
	}
	if env.ProtocolVersion != "0.1" || env.MessageID != "wake-7f3a" || len(env.Actions) != 1 {
		t.Fatalf("envelope = %+v", env)
	}
	a := env.Actions[0]
	if a.ActionID != "wake-7f3a/0" || a.ActionType != actions.ActionPrefetch || a.ActionVersion != actions.PrefetchVersion {
		t.Fatalf("action = %+v", a)
	}
	// The vector's payload has only two keys; the rest decode as zero.
	var p schemas.PrefetchPayload
	if _, err := p.UnmarshalMsg(a.Payload); err != nil {
		t.Fatal(err)
	}
	if p.RequestID != "req-1" || len(p.TokenIDs) != 64 || p.TokenIDs[0] != 0 || p.TokenIDs[63] != 63 {
		t.Fatalf("payload = %+v", p)
	}
}

func TestNewPrefetchEnvelopeRoundTrip(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123)
	in := actions.Prefetch{
		RequestID: "req-1", SessionID: "sess-9", Model: "Qwen/Qwen3-8B",
		TokenIDs: []uint32{1, 2, 1<<32 - 1}, DpRank: 3, ExpiresAt: exp,
	}
	env, err := actions.NewPrefetchEnvelope(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	var got schemas.KvHintsEnvelope
	if _, err := got.UnmarshalMsg(b); err != nil {
		t.Fatal(err)
	}
	wantID := "wake-b37c3beeb68532d6"
	if got.ProtocolVersion != "0.1" || got.MessageID != wantID || len(got.Actions) != 1 {
		t.Fatalf("envelope = %+v", got)
	}
	a := got.Actions[0]
	if a.ActionID != wantID+"/0" || a.ActionType != "kv.prefetch" || a.ActionVersion != "1.0" {
		t.Fatalf("action = %+v", a)
	}
	var p schemas.PrefetchPayload
	if _, err := p.UnmarshalMsg(a.Payload); err != nil {
		t.Fatal(err)
	}
	if p.RequestID != in.RequestID || p.SessionID != in.SessionID || p.Model != in.Model ||
		!slices.Equal(p.TokenIDs, in.TokenIDs) || p.DpRank != 3 || p.ExpiresAtMs != 1_700_000_000_123 {
		t.Fatalf("payload = %+v", p)
	}
}

func TestNewPrefetchEnvelopeRejectsBadInput(t *testing.T) {
	exp := time.Now().Add(time.Minute)
	for name, p := range map[string]actions.Prefetch{
		"no request id":  {ExpiresAt: exp},
		"no expiry":      {RequestID: "r"},
		"bad utf8 model": {RequestID: "r", Model: "\xff", ExpiresAt: exp},
	} {
		if _, err := actions.NewPrefetchEnvelope(p); !errors.Is(err, actions.ErrInvalidHint) {
			t.Errorf("%s: err = %v, want ErrInvalidHint", name, err)
		}
	}
}

func TestEncodeEnvelopeRejectsBadPayload(t *testing.T) {
	for name, payload := range map[string]msgp.Raw{
		"empty":    nil,
		"not map":  msgp.AppendString(nil, "x"),
		"trailing": append(msgp.AppendMapHeader(nil, 0), 0xc0),
		"truncate": msgp.AppendMapHeader(nil, 1),
	} {
		env := &schemas.KvHintsEnvelope{ProtocolVersion: "0.1", MessageID: "m",
			Actions: []schemas.KvHintAction{{ActionID: "m/0", ActionType: "x", ActionVersion: "1", Payload: payload}}}
		if _, err := actions.EncodeEnvelope(env); !errors.Is(err, actions.ErrInvalidHint) {
			t.Errorf("%s: err = %v, want ErrInvalidHint", name, err)
		}
	}
	if _, err := actions.EncodeEnvelope(nil); !errors.Is(err, actions.ErrInvalidHint) {
		t.Errorf("nil envelope: err = %v", err)
	}
}

func BenchmarkPrefetchEncode(b *testing.B) {
	toks := make([]uint32, 8192)
	for i := range toks {
		toks[i] = uint32(i * 7919)
	}
	p := actions.Prefetch{RequestID: "chatcmpl-9f1c2e", SessionID: "thread-42", Model: "Qwen/Qwen3-8B",
		TokenIDs: toks, DpRank: 1, ExpiresAt: time.Now().Add(time.Minute)}
	b.ReportAllocs()
	for b.Loop() {
		env, err := actions.NewPrefetchEnvelope(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := actions.EncodeEnvelope(env); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodePrefetchIsEncodeEnvelope: the one-pass encoder writes exactly
// the bytes of the two-step one (which the vector and the Python peer
// pin), for empty, small and long prompts and odd strings.
func TestEncodePrefetchIsEncodeEnvelope(t *testing.T) {
	long := make([]uint32, 70000) // past msgpack's array16
	for i := range long {
		long[i] = uint32(i * 2654435761)
	}
	exp := time.UnixMilli(1_764_000_000_123)
	for _, p := range []actions.Prefetch{
		{RequestID: "r", ExpiresAt: exp},
		{RequestID: "r", TokenIDs: []uint32{}, ExpiresAt: exp},
		{RequestID: "req-1", SessionID: "s", Model: "Qwen/Qwen3-8B", TokenIDs: []uint32{1, 2, 1 << 31}, DpRank: 3, ExpiresAt: exp},
		{RequestID: "ünïcode", Model: "m", TokenIDs: long, DpRank: 1 << 20, ExpiresAt: exp},
		// Fields after the token ids longer than the encoder sets aside
		// on its stack.
		{RequestID: "salted", TokenIDs: long[:100], CacheSalt: strings.Repeat("salt", 100), WorkerID: 1 << 40, ExpiresAt: exp,
			SequenceHashes: []uint64{1, 1 << 63}, SequenceBlockSize: 16, BlockHashes: []uint64{7}},
		// A key named as the field, as a value before it.
		{RequestID: "token_ids", SessionID: "token_ids", TokenIDs: long[:20], ExpiresAt: exp},
	} {
		env, err := actions.NewPrefetchEnvelope(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := actions.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		got, id, err := actions.EncodePrefetch(p)
		if err != nil {
			t.Fatal(err)
		}
		if id != env.MessageID || !bytes.Equal(got, want) {
			t.Fatalf("%s: one-pass encoding differs (id %s vs %s, %d vs %d bytes)", p.RequestID, id, env.MessageID, len(got), len(want))
		}
	}
	if _, _, err := actions.EncodePrefetch(actions.Prefetch{RequestID: "r"}); !errors.Is(err, actions.ErrInvalidHint) {
		t.Fatalf("no expiry: err %v, want ErrInvalidHint", err)
	}
}

// FuzzEncodePrefetchIsEncodeEnvelope: for any strings, token ids and
// numbers, the one-pass encoder (its token ids written in bulk) writes
// the bytes of the generated encoder, into a fresh buffer or into a
// reused one holding an older hint.
func FuzzEncodePrefetchIsEncodeEnvelope(f *testing.F) {
	f.Add("req-1", "s", "m", "", []byte{1, 0, 0, 0, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, uint32(3), uint64(9), int64(1_764_000_000_123))
	f.Add("token_ids", "token_ids", "", strings.Repeat("x", 300), []byte{0, 1, 0, 0}, uint32(0), uint64(0), int64(1))
	var reused []byte
	f.Fuzz(func(t *testing.T, id, session, model, salt string, tokenBytes []byte, rank uint32, worker uint64, expMs int64) {
		tokens := make([]uint32, len(tokenBytes)/4)
		for i := range tokens {
			tokens[i] = binary.LittleEndian.Uint32(tokenBytes[4*i:])
		}
		p := actions.Prefetch{RequestID: id, SessionID: session, Model: model, CacheSalt: salt, TokenIDs: tokens,
			DpRank: rank, WorkerID: worker, ExpiresAt: time.UnixMilli(expMs)}
		env, err := actions.NewPrefetchEnvelope(p)
		if err != nil {
			if _, _, err2 := actions.EncodePrefetch(p); !errors.Is(err, actions.ErrInvalidHint) || !errors.Is(err2, actions.ErrInvalidHint) {
				t.Fatalf("two-step: %v; one-pass: %v; want ErrInvalidHint from both", err, err2)
			}
			return
		}
		want, err := actions.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := actions.EncodePrefetch(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("one-pass: %v, %d bytes, want %d", err, len(got), len(want))
		}
		if reused, _, err = actions.AppendPrefetch(reused, p); err != nil || !bytes.Equal(reused, want) {
			t.Fatalf("into a reused buffer: %v, %d bytes, want %d", err, len(reused), len(want))
		}
	})
}

// BenchmarkEncodePrefetch compares the one-pass encoder with the two-step
// one on a 2,048-token wake-up:
//
//	go test -run '^$' -bench EncodePrefetch -cpu 1 ./actions/
func BenchmarkEncodePrefetch(b *testing.B) {
	p := actions.Prefetch{RequestID: "bench", Model: "m", TokenIDs: make([]uint32, 2048), ExpiresAt: time.Now()}
	for i := range p.TokenIDs {
		p.TokenIDs[i] = uint32(i * 7919 % 152064)
	}
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := actions.EncodePrefetch(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two-step", func(b *testing.B) {
		for b.Loop() {
			env, err := actions.NewPrefetchEnvelope(p)
			if err == nil {
				_, err = actions.EncodeEnvelope(env)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPrefetchCacheSalt: a salted prefetch carries cache_salt, which the
// worker-side decoder reads back; an unsalted one encodes without the
// key, byte for byte as before it existed, so msgspec receivers that
// never heard of it see the same payload.
func TestPrefetchCacheSalt(t *testing.T) {
	in := actions.Prefetch{RequestID: "req-1", Model: "m", TokenIDs: []uint32{1, 2}, ExpiresAt: time.UnixMilli(1_700_000_000_000)}
	plain, _, err := actions.EncodePrefetch(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("cache_salt")) {
		t.Fatal("an unsalted prefetch names cache_salt")
	}
	in.CacheSalt = "tenant-7"
	salted, _, err := actions.EncodePrefetch(in)
	if err != nil {
		t.Fatal(err)
	}
	env, err := receiver.Decode(salted)
	if err != nil {
		t.Fatal(err)
	}
	if got := env.Actions[0].Prefetch.CacheSalt; got != "tenant-7" {
		t.Fatalf("cache_salt decoded as %q", got)
	}
	in.CacheSalt = "\xff"
	if _, _, err := actions.EncodePrefetch(in); !errors.Is(err, actions.ErrInvalidHint) {
		t.Fatalf("invalid UTF-8 salt: err = %v, want ErrInvalidHint", err)
	}
}
