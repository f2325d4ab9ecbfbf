package eventplane

import (
	"sync"

	"github.com/hintstream/hintstream/kvevents"
)

// DefaultMaxTracked bounds the (worker, dp rank) pairs a Sequencer tracks.
const DefaultMaxTracked = 1 << 16

// Sequencer turns envelope sequences into the event ids the index checks
// for gaps (kvevents.Index: one past the last id is in order, higher is
// a gap that marks the pair stale, --exclude-stale).
//
// Why not the RouterEvent's own event_id: Dynamo's publisher batches and
// deduplicates engine events before it publishes (publisher/batching.rs,
// dedup.rs), so event ids may skip without anything being lost, while
// every publish takes the next sequence (EventPublisher::publish_bytes_ref,
// fetch_add). A skipped sequence is a frame core NATS dropped.
//
// Each pair is bound to the publisher whose frames it last carried. On the
// first frame of a publisher for a pair (hintstream started, the worker
// restarted with a new publisher_id, or a snapshot was loaded) the ids are
// rebased so that this frame is one past the pair's last id in the index:
// no gap is claimed for what happened before. After that, id = base +
// (sequence - first sequence), so a skipped sequence is a skipped id, and
// a frame that arrives late fills its place. A frame older than the first
// one seen gets id 0 (no id: never a gap).
//
// A Sequencer is safe for concurrent use.
type Sequencer struct {
	mu    sync.Mutex
	max   int
	pairs map[kvevents.WorkerKey]seqState
}

type seqState struct {
	publisher uint64
	first     uint64 // first sequence seen from publisher
	base      uint64 // id given to first
}

// NewSequencer returns a Sequencer tracking at most max pairs (default
// DefaultMaxTracked when max <= 0); past it, tracking starts afresh, which
// costs one rebase per pair and never a false gap.
func NewSequencer(max int) *Sequencer {
	if max <= 0 {
		max = DefaultMaxTracked
	}
	return &Sequencer{max: max, pairs: make(map[kvevents.WorkerKey]seqState)}
}

// EventID returns the id of a frame of pair k. last reports the pair's
// highest id so far (kvevents.Index.LastEventID); it is called only when
// the pair is rebased.
func (s *Sequencer) EventID(k kvevents.WorkerKey, env Envelope, last func(kvevents.WorkerKey) (uint64, bool)) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.pairs[k]
	if !ok || st.publisher != env.PublisherID {
		if !ok && len(s.pairs) >= s.max {
			clear(s.pairs)
		}
		l, _ := last(k)
		st = seqState{publisher: env.PublisherID, first: env.Sequence, base: l + 1}
		if st.base == 0 {
			st.base = 1 // l was the largest id: start over rather than wrap to "no id"
		}
		s.pairs[k] = st
	}
	if env.Sequence < st.first {
		back := st.first - env.Sequence
		if back >= st.base {
			return 0
		}
		return st.base - back
	}
	return st.base + (env.Sequence - st.first)
}
