package kvevents

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// loadRouterEvents decodes and adapts every line of
// dynamo_router_events.jsonl.
func loadRouterEvents(t testing.TB) []Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir(t), "dynamo_router_events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for line := range bytes.Lines(b) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		re, err := schemas.Limits{}.DecodeRouterEvent(line)
		if err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		out = append(out, FromRouterEvent(re))
	}
	if len(out) != 4 {
		t.Fatalf("got %d router events, want 4", len(out))
	}
	return out
}

func TestFromRouterEventVectors(t *testing.T) {
	evs := loadRouterEvents(t)
	local := LocalBlockHashes(ascending(100), 16)
	w := WorkerKey{WorkerID: 7, DpRank: 0}

	e := evs[0]
	if e.Worker != w || e.EventID != 1 || e.Kind != schemas.KindStored || e.Tier != "" || e.ParentHash != nil {
		t.Fatalf("event 1 header = %+v", e)
	}
	want := []Block{{9001, local[0]}, {9002, local[1]}}
	if !slices.Equal(e.Blocks, want) {
		t.Fatalf("event 1 blocks = %v, want %v", e.Blocks, want)
	}

	e = evs[1]
	if e.EventID != 2 || e.Tier != "" || e.ParentHash == nil || *e.ParentHash != 9002 {
		t.Fatalf("event 2 (explicit device tier, parent 9002) = %+v", e)
	}
	if want := []Block{{9003, local[2]}}; !slices.Equal(e.Blocks, want) {
		t.Fatalf("event 2 blocks = %v, want %v", e.Blocks, want)
	}

	e = evs[2]
	if e.Kind != schemas.KindRemoved || !slices.Equal(e.Removed, []uint64{9003}) || e.Blocks != nil {
		t.Fatalf("event 3 = %+v", e)
	}

	e = evs[3]
	if e.Kind != schemas.KindCleared || e.EventID != 4 || e.Blocks != nil || e.Removed != nil {
		t.Fatalf("event 4 = %+v", e)
	}
}

func TestFromRouterEventTierAndSignedHash(t *testing.T) {
	line := []byte(`{"worker_id": 3, "storage_tier": "host_pinned", "event": {"event_id": 9, "dp_rank": 2,
		"data": {"stored": {"parent_hash": -2, "blocks": [{"block_hash": -1, "tokens_hash": 5}]}}}}`)
	re, err := schemas.Limits{}.DecodeRouterEvent(line)
	if err != nil {
		t.Fatal(err)
	}
	e := FromRouterEvent(re)
	if e.Worker != (WorkerKey{3, 2}) || e.Tier != schemas.TierHostPinned {
		t.Fatalf("header = %+v", e)
	}
	if e.ParentHash == nil || *e.ParentHash != math.MaxUint64-1 {
		t.Fatalf("parent = %v, want 2^64-2", e.ParentHash)
	}
	if want := []Block{{math.MaxUint64, 5}}; !slices.Equal(e.Blocks, want) {
		t.Fatalf("blocks = %v, want %v", e.Blocks, want)
	}
}

func TestFromRouterEventNil(t *testing.T) {
	// The zero Event, which the index rejects (index.TestFromRouterEventNilRejected).
	if ev := FromRouterEvent(nil); !reflect.DeepEqual(ev, Event{}) {
		t.Fatalf("FromRouterEvent(nil) = %+v, want the zero Event", ev)
	}
}

func ascending(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}
