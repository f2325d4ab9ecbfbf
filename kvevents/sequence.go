package kvevents

import (
	"sync"

	"github.com/hintstream/hintstream/ingest/eventplane"
)

// maxPublishersPerPair bounds the publishers remembered per pair: a
// worker has one at a time, a new one per restart.
const maxPublishersPerPair = 8

// DefaultMaxTracked bounds the (worker, dp rank) pairs a Sequencer tracks.
const DefaultMaxTracked = 1 << 16

// Sequencer turns envelope sequences into the event ids the index checks
// for gaps (index.Memory: one past the last id is in order, higher is
// a gap that marks the pair stale, --exclude-stale).
//
// Why not the RouterEvent's own event_id: Dynamo's publisher batches and
// deduplicates engine events before it publishes (publisher/batching.rs,
// dedup.rs), so event ids may skip without anything being lost, while
// every publish takes the next sequence (EventPublisher::publish_bytes_ref,
// fetch_add). A skipped sequence is a frame core NATS dropped.
//
// The sequence is the publisher's, not a pair's: one publisher may carry
// several (worker, dp rank) pairs (a worker's dp ranks share its event
// plane publisher), so each pair sees only some of its publisher's
// sequences, and a pair's next frame is rarely the publisher's next
// sequence. So gaps are found per publisher id, and every pair is given
// ids of its own, one past its last:
//
//   - each publisher's next sequence is tracked on its own, whichever
//     pairs it carries and whatever other publishers a pair hears from
//     in between (a publisher id that alternates with another still has
//     its skipped sequences seen);
//   - a skipped sequence may have been any of the publisher's pairs' frame,
//     so each pair it carried since gets a gap (its next id skips one)
//     when its next frame from that publisher comes;
//   - the first frame of a publisher for a pair (hintstream started, the
//     worker restarted with a new publisher_id, or a snapshot was loaded)
//     claims no gap for what happened before;
//   - a frame older than its publisher's next sequence (a duplicate, or a
//     late frame) gets id 0 (no id: applied, never a gap). A pair made
//     stale by a publisher's gap is in sync again after a cleared event.
//
// A Sequencer is safe for concurrent use.
type Sequencer struct {
	mu    sync.Mutex
	max   int
	pubs  map[uint64]*pubState
	pairs map[WorkerKey]*pairState
}

type pubState struct {
	next uint64 // the sequence expected next
	gaps uint64 // skips seen so far
}

type pairState struct {
	last uint64 // the last id given
	// gapsSeen is, per publisher the pair heard from, that publisher's
	// gaps already turned into a gap of the pair.
	gapsSeen map[uint64]uint64
}

// NewSequencer returns a Sequencer tracking at most max pairs and max
// publishers (default DefaultMaxTracked when max <= 0); past it, tracking
// starts afresh, which costs one rebase per pair and never a false gap.
func NewSequencer(max int) *Sequencer {
	if max <= 0 {
		max = DefaultMaxTracked
	}
	return &Sequencer{max: max, pubs: make(map[uint64]*pubState), pairs: make(map[WorkerKey]*pairState)}
}

// EventID returns the id of a frame of pair k. last reports the pair's
// highest id so far (index.Memory.LastEventID); it is called when the
// pair is first seen.
func (s *Sequencer) EventID(k WorkerKey, env eventplane.Envelope, last func(WorkerKey) (uint64, bool)) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	pub, ok := s.pubs[env.PublisherID]
	if !ok {
		if len(s.pubs) >= s.max {
			clear(s.pubs)
			clear(s.pairs) // their gapsSeen count in the publishers forgotten
		}
		pub = &pubState{next: env.Sequence}
		s.pubs[env.PublisherID] = pub
	}
	switch {
	case env.Sequence < pub.next:
		return 0
	case env.Sequence > pub.next:
		pub.gaps++
	}
	pub.next = env.Sequence + 1
	if pub.next == 0 {
		pub.next = env.Sequence // the last sequence: a wrap would read as every frame late
	}
	pr, ok := s.pairs[k]
	if !ok {
		if len(s.pairs) >= s.max {
			clear(s.pairs)
		}
		l, _ := last(k)
		pr = &pairState{last: l, gapsSeen: map[uint64]uint64{}}
		s.pairs[k] = pr
	}
	seen, heard := pr.gapsSeen[env.PublisherID]
	if !heard && len(pr.gapsSeen) >= maxPublishersPerPair {
		clear(pr.gapsSeen) // publishers of a worker's past lives
	}
	pr.gapsSeen[env.PublisherID] = pub.gaps
	step := uint64(1)
	if heard && pub.gaps > seen {
		step = 2 // one id skipped: the index marks the pair stale
	}
	if pr.last > ^uint64(0)-step {
		pr.last = 0 // the largest id: start over rather than wrap to "no id"
	}
	pr.last += step
	return pr.last
}
