package kvevents_test

import (
	"testing"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// TestSequencerDrivesIndexGaps: envelope sequences, through the index's
// own order check, mark a pair stale exactly when a frame was skipped, and
// a new publisher (a restarted worker) starts clean.
func TestSequencerDrivesIndexGaps(t *testing.T) {
	ix := index.New()
	sq := kvevents.NewSequencer(0)
	k := kvevents.WorkerKey{WorkerID: 7}
	apply := func(pub, seq uint64) uint64 {
		id := sq.EventID(k, eventplane.Envelope{PublisherID: pub, Sequence: seq}, ix.LastEventID)
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
	// A late frame has no id: it changes nothing of the order.
	if id := apply(100, 59); id != 0 {
		t.Fatalf("late frame id %d, want 0", id)
	}
	ix.Apply(kvevents.Event{Worker: k, Kind: schemas.KindCleared}) // resync
	if ix.Stale(k) {
		t.Fatal("still stale after a clear")
	}
	// The worker restarts: a new publisher from sequence 0, no gap.
	before := ix.Stats().Gaps
	if id := apply(200, 0); id != 5 {
		t.Fatalf("id after the restart %d, want 5", id)
	}
	apply(200, 1)
	if ix.Stale(k) || ix.Stats().Gaps != before {
		t.Fatalf("restart taken for a gap: %+v", ix.Stats())
	}
	// A frame older than the first one seen has no id.
	if id := sq.EventID(kvevents.WorkerKey{WorkerID: 8}, eventplane.Envelope{PublisherID: 1, Sequence: 10}, ix.LastEventID); id != 1 {
		t.Fatalf("id %d", id)
	}
	if id := sq.EventID(kvevents.WorkerKey{WorkerID: 8}, eventplane.Envelope{PublisherID: 1, Sequence: 3}, ix.LastEventID); id != 0 {
		t.Fatalf("older frame id %d, want 0", id)
	}
}

// TestSequencerSharedPublisher is issue 26 finding 8, first case: one
// publisher carries dp ranks 0 and 1 (as the project's sample frames do),
// so each rank sees every other sequence. No gap may be claimed, and a
// frame the publisher really skipped still marks its pairs stale.
func TestSequencerSharedPublisher(t *testing.T) {
	ix := index.New()
	sq := kvevents.NewSequencer(0)
	r0, r1 := kvevents.WorkerKey{WorkerID: 7}, kvevents.WorkerKey{WorkerID: 7, DpRank: 1}
	apply := func(k kvevents.WorkerKey, seq uint64) {
		id := sq.EventID(k, eventplane.Envelope{PublisherID: 42, Sequence: seq}, ix.LastEventID)
		if err := ix.Apply(kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindRemoved, Removed: []uint64{1}}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(1); seq <= 16; seq++ {
		apply([]kvevents.WorkerKey{r0, r1}[seq%2], seq)
	}
	if st := ix.Stats(); st.Gaps != 0 || ix.Stale(r0) || ix.Stale(r1) {
		t.Fatalf("false gaps on a shared publisher: %+v", st)
	}
	// Sequence 17 is lost; 18 (rank 0) and 19 (rank 1) follow.
	apply(r0, 18)
	apply(r1, 19)
	if !ix.Stale(r0) || !ix.Stale(r1) {
		t.Fatalf("a lost frame of the shared publisher left its pairs in sync: r0 %v r1 %v", ix.Stale(r0), ix.Stale(r1))
	}
	// In order again: no further gap.
	before := ix.Stats().Gaps
	apply(r0, 20)
	apply(r1, 21)
	if ix.Stats().Gaps != before {
		t.Fatalf("gaps %d after in-order frames, want %d", ix.Stats().Gaps, before)
	}
}

// TestSequencerAlternatingPublishers is finding 8, second case: a pair
// hears from two publisher ids in turn; a sequence one of them skips is
// a gap, although the pair switched publishers in between.
func TestSequencerAlternatingPublishers(t *testing.T) {
	ix := index.New()
	sq := kvevents.NewSequencer(0)
	k := kvevents.WorkerKey{WorkerID: 3}
	apply := func(pub, seq uint64) {
		id := sq.EventID(k, eventplane.Envelope{PublisherID: pub, Sequence: seq}, ix.LastEventID)
		if err := ix.Apply(kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindRemoved, Removed: []uint64{1}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < 10; i++ {
		apply(100, i)
		apply(200, i)
	}
	if ix.Stale(k) || ix.Stats().Gaps != 0 {
		t.Fatalf("alternating publishers in order taken for a gap: %+v", ix.Stats())
	}
	apply(100, 11) // 100's sequence 10 is lost
	apply(200, 10)
	if !ix.Stale(k) || ix.Stats().Gaps != 1 {
		t.Fatalf("a lost frame hidden by the alternating publisher: stale %v, %+v", ix.Stale(k), ix.Stats())
	}
}
