package kvevents

import (
	"slices"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
)

// Decoder adapts KV-event messages (Decode) into Events in memory it
// reuses, for a caller that applies each message's events before it
// decodes the next (consumers.ApplyKV pools them): the events a call returns, and
// the Blocks, Removed and ParentHash they point to, are valid until the
// next call on the same Decoder, which overwrites them. Index.Apply copies
// what it keeps, so applying them is safe; whatever keeps an event longer
// (index.Holding holds those of unregistered workers) must keep
// Event.Clone. DecodeEngineBatch and FromRouterEvent are the allocating
// forms, whose results are the caller's. The zero Decoder is ready to
// use; it is not safe for concurrent use.
type Decoder struct {
	// Limits bound what Decode accepts; zero fields take
	// schemas.DefaultLimits.
	Limits schemas.Limits

	// router is the last RouterEvent decoded: garbage once converted,
	// so the next message decodes into it.
	router   schemas.RouterEvent
	envelope eventplane.Envelope
	batch    batchDecoder
	one      [1]Event
	blocks   []Block
	removed  []uint64
	parent   uint64
}

// decoderKeep is the most elements (blocks, hashes or tokens) an arena
// keeps for the next call: one hostile batch of MaxBytes must not pin its
// memory in a pooled Decoder for good.
const decoderKeep = 1 << 14

// EngineBatch is DecodeEngineBatch into d's memory.
func (d *Decoder) EngineBatch(data []byte, workerID uint64, eventID uint64, lim schemas.Limits) ([]Event, error) {
	b := &d.batch
	b.tokens, b.local, b.hashes = trimmed(b.tokens), trimmed(b.local), trimmed(b.hashes)
	b.blocks, b.parents = trimmed(b.blocks), trimmed(b.parents)
	if cap(b.out) > decoderKeep {
		b.out = nil
	}
	clear(b.out[:cap(b.out)]) // drop the last call's references
	return b.decode(data, workerID, eventID, lim)
}

// RouterEvent is FromRouterEvent into d's memory, as a one-event slice.
func (d *Decoder) RouterEvent(ev *schemas.RouterEvent) []Event {
	d.blocks, d.removed = trimmed(d.blocks), trimmed(d.removed)
	d.one[0] = convertRouterEvent(ev, d)
	return d.one[:]
}

// scratch is n elements of *s, grown if need be, for the caller to
// overwrite; capped at n, so an append to it cannot reach *s's spare room.
func scratch[E any](s *[]E, n int) []E {
	*s = slices.Grow((*s)[:0], n)[:n]
	return (*s)[:n:n]
}

// trimmed is s emptied, or nil when it is too large to keep.
func trimmed[E any](s []E) []E {
	if cap(s) > decoderKeep {
		return nil
	}
	return s[:0]
}
