package eventplane

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// TestSequencerDrivesIndexGaps: envelope sequences, through the index's
// own order check, mark a pair stale exactly when a frame was skipped, and
// a new publisher (a restarted worker) starts clean.
func TestSequencerDrivesIndexGaps(t *testing.T) {
	ix := kvevents.NewIndex()
	sq := NewSequencer(0)
	k := kvevents.WorkerKey{WorkerID: 7}
	apply := func(pub, seq uint64) uint64 {
		id := sq.EventID(k, Envelope{PublisherID: pub, Sequence: seq}, ix.LastEventID)
		if err := ix.Apply(kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindRemoved, Removed: []uint64{1}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Joining a publisher mid-stream claims no gap.
	if id := apply(100, 57); id != 1 {
		t.Fatalf("first id %d, want 1", id)
	}
	apply(100, 58)
	if ix.Stale(k) {
		t.Fatal("stale without a gap")
	}
	apply(100, 60) // 59 lost
	if !ix.Stale(k) || ix.Stats().Gaps != 1 {
		t.Fatalf("gap not seen: stale %v, stats %+v", ix.Stale(k), ix.Stats())
	}
	apply(100, 59) // arrives late: in sync again
	if ix.Stale(k) {
		t.Fatal("late frame did not fill the gap")
	}
	// The worker restarts: a new publisher from sequence 0, no gap.
	before := ix.Stats().Gaps
	if id := apply(200, 0); id != 5 {
		t.Fatalf("rebased id %d, want 5", id)
	}
	apply(200, 1)
	if ix.Stale(k) || ix.Stats().Gaps != before {
		t.Fatalf("restart taken for a gap: %+v", ix.Stats())
	}
	// A frame older than the first one seen has no id.
	if id := sq.EventID(kvevents.WorkerKey{WorkerID: 8}, Envelope{PublisherID: 1, Sequence: 10}, ix.LastEventID); id != 1 {
		t.Fatalf("id %d", id)
	}
	if id := sq.EventID(kvevents.WorkerKey{WorkerID: 8}, Envelope{PublisherID: 1, Sequence: 3}, ix.LastEventID); id != 0 {
		t.Fatalf("older frame id %d, want 0", id)
	}
}

func TestSequencerBound(t *testing.T) {
	sq := NewSequencer(2)
	none := func(kvevents.WorkerKey) (uint64, bool) { return 0, false }
	for w := uint64(1); w <= 5; w++ {
		sq.EventID(kvevents.WorkerKey{WorkerID: w}, Envelope{PublisherID: 1}, none)
		if len(sq.pairs) > 2 {
			t.Fatalf("%d pairs tracked, bound 2", len(sq.pairs))
		}
	}
}
