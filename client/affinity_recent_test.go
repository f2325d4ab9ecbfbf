package client

import (
	"testing"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// The writer's record of a session keeps its unexpired earlier wake-ups,
// newest first and bounded; a withdrawal takes back the dropped
// prefetch's entry, or the record itself, whose place the previous
// unexpired wake-up takes (or an expired record when none is left).
func TestAffinityRecentAndWithdraw(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	s := newAffinityState(4)
	s.now = func() time.Time { return now }
	put := func(id string, worker uint64, expires int64) schemas.AffinityRecord {
		p := affinityPut{key: "k", rec: schemas.AffinityRecord{WorkerID: worker, ExpiresAtMs: expires, RequestID: id}}
		if !s.prepare(&p) {
			t.Fatalf("put %s refused", id)
		}
		return p.rec
	}
	withdraw := func(id string) (schemas.AffinityRecord, bool) {
		p := affinityPut{key: "k", rec: schemas.AffinityRecord{RequestID: id}, withdraw: true}
		ok := s.prepare(&p)
		return p.rec, ok
	}
	ms := now.UnixMilli()
	put("w0", 9, ms-1) // already expired: never listed
	put("w1", 1, ms+1000)
	put("w2", 2, ms+1000)
	r := put("w3", 3, ms+1000)
	if len(r.Recent) != 2 || r.Recent[0].RequestID != "w2" || r.Recent[1].RequestID != "w1" {
		t.Fatalf("recent %+v, want w2, w1", r.Recent)
	}
	for i := range 10 {
		r = put("x"+string(rune('a'+i)), 4, ms+1000)
	}
	if len(r.Recent) != schemas.MaxAffinityRecent {
		t.Fatalf("%d recent entries, want the cap %d", len(r.Recent), schemas.MaxAffinityRecent)
	}
	enc := r.Encode()
	if back, err := schemas.DecodeAffinityRecord(enc); err != nil || len(back.Recent) != schemas.MaxAffinityRecent || len(enc) > 4096 {
		t.Fatalf("record of %d bytes decodes to %+v, %v", len(enc), back, err)
	}

	s = newAffinityState(4)
	s.now = func() time.Time { return now }
	put("a", 1, ms+1000)
	put("b", 2, ms+1000)
	if rec, ok := withdraw("a"); !ok || rec.RequestID != "b" || len(rec.Recent) != 0 {
		t.Fatalf("withdraw an earlier entry: %+v %v", rec, ok)
	}
	if _, ok := withdraw("a"); ok {
		t.Fatal("a second withdrawal wrote again")
	}
	put("c", 3, ms+1000)
	if rec, ok := withdraw("c"); !ok || rec.RequestID != "b" || rec.WorkerID != 2 {
		t.Fatalf("withdraw the record: %+v %v, want b's entry back", rec, ok)
	}
	if rec, ok := withdraw("b"); !ok || rec.ExpiresAtMs != 1 {
		t.Fatalf("withdraw the last: %+v %v, want an expired record", rec, ok)
	}
	// The state is bounded: the oldest session is forgotten.
	for i := range 6 {
		p := affinityPut{key: string(rune('A' + i)), rec: schemas.AffinityRecord{WorkerID: 1, ExpiresAtMs: ms + 1000, RequestID: "r"}}
		s.prepare(&p)
	}
	if len(s.by) != 4 {
		t.Fatalf("%d sessions remembered, want 4", len(s.by))
	}
}
