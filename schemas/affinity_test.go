package schemas

import (
	"errors"
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

func TestDecodeAffinityRecord(t *testing.T) {
	rec := AffinityRecord{WorkerID: 7, DpRank: 2, ExpiresAtMs: 1700000000000, RequestID: "wake-1"}
	got, err := DecodeAffinityRecord(rec.Encode())
	if err != nil || *got != rec {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// A peer's encoding (Python's json.dumps), with a field we do not know.
	got, err = DecodeAffinityRecord([]byte(`{"worker_id": 7, "dp_rank": 2, "expires_at_ms": 1700000000000, "request_id": "wake-1", "model": "m"}`))
	if err != nil || *got != rec {
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
		if err != nil || *again != *r {
			t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
		}
	})
}
