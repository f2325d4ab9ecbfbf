package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// NATS KV keys: see nats.go's kv.go, validKeyRe.
var natsKey = regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)

func TestAffinityKeyIsAValidKVKeyAndInvertible(t *testing.T) {
	for _, s := range []string{"s-1", "user/42 thread.7", "ünïcode ✓", "..", "a.b.>*", strings.Repeat("x", MaxAffinitySession)} {
		k := AffinityKey(s)
		if !natsKey.MatchString(k) || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") {
			t.Fatalf("%q → key %q: not a valid KV key", s, k)
		}
		if back, ok := SessionOfAffinityKey(k); !ok || back != s {
			t.Fatalf("%q → %q → %q, %v", s, k, back, ok)
		}
	}
	if AffinityKey("") != "" || AffinityKey(strings.Repeat("x", MaxAffinitySession+1)) != "" {
		t.Fatal("empty and over-long session ids must get no key")
	}
	if AffinityKey("a") == AffinityKey("b") {
		t.Fatal("distinct sessions share a key")
	}
}

// sameRecord compares records, an empty Recent equal to none (Encode
// omits it).
func sameRecord(a, b AffinityRecord) bool {
	if len(a.Recent) == 0 && len(b.Recent) == 0 {
		a.Recent, b.Recent = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func TestDecodeAffinityRecord(t *testing.T) {
	rec := AffinityRecord{WorkerID: 7, DpRank: 2, ExpiresAtMs: 1700000000000, RequestID: "wake-1"}
	got, err := DecodeAffinityRecord(rec.Encode())
	if err != nil || !sameRecord(*got, rec) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// With recent wake-ups (a session whose turns overlap).
	withRecent := rec
	withRecent.Recent = []AffinityEntry{{WorkerID: 3, DpRank: 1, ExpiresAtMs: 1700000000001, RequestID: "wake-0"}}
	if got, err := DecodeAffinityRecord(withRecent.Encode()); err != nil || !sameRecord(*got, withRecent) {
		t.Fatalf("round trip with recent: %+v %v", got, err)
	}
	tooMany := withRecent
	tooMany.Recent = make([]AffinityEntry, MaxAffinityRecent+1)
	if _, err := DecodeAffinityRecord(tooMany.Encode()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d recent entries accepted: %v", MaxAffinityRecent+1, err)
	}
	// A peer's encoding (Python's json.dumps), with a field we do not know.
	got, err = DecodeAffinityRecord([]byte(`{"worker_id": 7, "dp_rank": 2, "expires_at_ms": 1700000000000, "request_id": "wake-1", "model": "m"}`))
	if err != nil || !sameRecord(*got, rec) {
		t.Fatalf("peer encoding: %+v %v", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"worker_id":0,"expires_at_ms":1}`, `{"worker_id":1}`,
		`{"worker_id":-1,"expires_at_ms":1}`, `{"worker_id":1,"expires_at_ms":1} {}`, `{"worker_id":1,"dp_rank":4294967296,"expires_at_ms":1}`,
		`{"worker_id":1,"expires_at_ms":1,"request_id":` + strings.Repeat(`"`, 5000) + `}`} {
		if _, err := DecodeAffinityRecord([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%.40q: %v", bad, err)
		}
	}
}

func FuzzDecodeAffinityRecord(f *testing.F) {
	f.Add([]byte(`{"worker_id":7,"dp_rank":2,"expires_at_ms":1700000000000,"request_id":"wake-1"}`))
	f.Add([]byte(`{"worker_id":1}`))
	f.Add([]byte(`nul`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeAffinityRecord(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if r.WorkerID == 0 || r.ExpiresAtMs <= 0 {
			t.Fatalf("accepted %+v", r)
		}
		again, err := DecodeAffinityRecord(r.Encode())
		if err != nil || !sameRecord(*again, *r) {
			t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
		}
		if want, _ := json.Marshal(*r); !bytes.Equal(r.Encode(), want) {
			t.Fatalf("Encode %s, json.Marshal %s", r.Encode(), want)
		}
	})
}

// Encode writes what json.Marshal writes, for request ids it writes as
// they are and for those it escapes (where Encode defers to it).
func TestAffinityEncodeIsJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	ids := []string{"", "wake-1", `a"b`, `a\b`, "<&>", "\x00\x1f", "\x7f", "é", "\u2028", "\xff", strings.Repeat("x", 600)}
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for k := range b {
			b[k] = byte(rng.IntN(128))
		}
		ids = append(ids, string(b))
	}
	for i, id := range ids {
		r := AffinityRecord{WorkerID: rng.Uint64(), DpRank: rng.Uint32(), ExpiresAtMs: rng.Int64() - 1<<62, RequestID: id}
		if i%3 == 0 {
			r.WorkerID, r.DpRank, r.ExpiresAtMs = 0, 0, 0
		}
		if want, _ := json.Marshal(r); !bytes.Equal(r.Encode(), want) {
			t.Fatalf("Encode %s, json.Marshal %s", r.Encode(), want)
		}
	}
}
