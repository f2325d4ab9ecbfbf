// Package kvevents is KV ingestion: it turns a KV-event message of any
// format into one Batch of normalised Events (Decoder.Decode), and hashes
// blocks exactly as Dynamo's router does, so that the index's answer (how
// many leading blocks of a prompt each worker holds) matches the router's
// choice.
//
// Every engine format has one adapter that produces the normalised Event;
// the index (package kvevents/index) consumes only Events.
package kvevents

import (
	"slices"

	"github.com/hintstream/hintstream/schemas"
)

// WorkerKey identifies one KV-event publisher: a worker and its data
// parallel rank. Each (worker, dp rank) has its own cache.
type WorkerKey struct {
	WorkerID uint64
	DpRank   uint32
}

// Block is one stored block as the engine reports it.
type Block struct {
	// ExternalHash is the engine's own hash of the block (its sequence
	// hash); removals and parent references use it.
	ExternalHash uint64
	// LocalHash is Dynamo's LocalBlockHash of the block's tokens
	// (tokens_hash); the index chains these into sequence hashes.
	LocalHash uint64
}

// Event is the normalised KV-cache event every engine adapter produces.
type Event struct {
	Worker  WorkerKey
	EventID uint64
	Kind    schemas.EventKind
	// Tier is where the blocks live; "" means schemas.TierDevice.
	Tier schemas.StorageTier
	// ParentHash (stored) is the external hash of the block preceding
	// Blocks[0]; nil means Blocks[0] is the first block of a sequence.
	ParentHash *uint64
	// Blocks (stored) lists the stored blocks in sequence order.
	Blocks []Block
	// Removed (removed) lists external hashes of evicted blocks.
	Removed []uint64
}

// FromRouterEvent adapts a decoded Dynamo RouterEvent. A nil ev gives the
// zero Event, which Index.Apply rejects with ErrBadEvent. The event's
// slices and parent hash are its own (Decoder.RouterEvent reuses them).
func FromRouterEvent(ev *schemas.RouterEvent) Event { return convertRouterEvent(ev, nil) }

// convertRouterEvent is FromRouterEvent, into d's memory when d is set.
func convertRouterEvent(ev *schemas.RouterEvent, d *Decoder) Event {
	if ev == nil {
		return Event{}
	}
	out := Event{
		Worker:  WorkerKey{WorkerID: ev.WorkerID, DpRank: ev.Event.DpRank},
		EventID: ev.Event.EventID,
		Kind:    ev.Event.Data.Kind,
		Tier:    ev.StorageTier,
	}
	if out.Tier == schemas.TierDevice {
		out.Tier = ""
	}
	switch ev.Event.Data.Kind {
	case schemas.KindStored:
		s := ev.Event.Data.Stored
		if s == nil {
			break
		}
		if s.ParentHash != nil {
			if d != nil {
				d.parent = uint64(*s.ParentHash)
				out.ParentHash = &d.parent
			} else {
				p := uint64(*s.ParentHash)
				out.ParentHash = &p
			}
		}
		if d != nil {
			out.Blocks = scratch(&d.blocks, len(s.Blocks))
		} else {
			out.Blocks = make([]Block, len(s.Blocks))
		}
		for i, b := range s.Blocks {
			out.Blocks[i] = Block{ExternalHash: uint64(b.BlockHash), LocalHash: uint64(b.TokensHash)}
		}
	case schemas.KindRemoved:
		r := ev.Event.Data.Removed
		if r == nil {
			break
		}
		if d != nil {
			out.Removed = scratch(&d.removed, len(r.BlockHashes))
		} else {
			out.Removed = make([]uint64, len(r.BlockHashes))
		}
		for i, h := range r.BlockHashes {
			out.Removed[i] = uint64(h)
		}
	}
	return out
}

// Clone is ev with Blocks, Removed and ParentHash in memory of its own,
// for keeping an event past the call that got it (see Decoder).
func (ev Event) Clone() Event {
	if ev.ParentHash != nil {
		p := *ev.ParentHash
		ev.ParentHash = &p
	}
	ev.Blocks = slices.Clone(ev.Blocks)
	ev.Removed = slices.Clone(ev.Removed)
	return ev
}
