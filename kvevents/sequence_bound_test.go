package kvevents

import (
	"testing"

	"github.com/hintstream/hintstream/ingest/eventplane"
)

func TestSequencerBound(t *testing.T) {
	sq := NewSequencer(2)
	none := func(WorkerKey) (uint64, bool) { return 0, false }
	for w := uint64(1); w <= 5; w++ {
		sq.EventID(WorkerKey{WorkerID: w}, eventplane.Envelope{PublisherID: 1}, none)
		if len(sq.pairs) > 2 || len(sq.pubs) > 2 {
			t.Fatalf("%d pairs tracked, bound 2", len(sq.pairs))
		}
	}
}
