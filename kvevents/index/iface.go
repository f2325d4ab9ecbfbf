package index

import (
	"errors"

	"github.com/hintstream/hintstream/kvevents"
)

// Index is what KV ingestion applies events to: Memory itself, or a
// decorator in front of one (Holding). As llm-d's kvblock.Index, it is
// apart from the decoders, which only produce kvevents.Events.
//
// Apply must not keep ev's Blocks, Removed or ParentHash past its return:
// ingestion decodes into memory it reuses for the next message
// (kvevents.Decoder); whatever keeps an event keeps ev.Clone(), as Holding
// does. LastEventID is the last applied event id of a pair (the event
// plane's sequencer rebases on it).
type Index interface {
	Apply(ev kvevents.Event) error
	LastEventID(k kvevents.WorkerKey) (uint64, bool)
	// RemoveWorker removes every dp rank of a worker.
	RemoveWorker(workerID uint64)
	// RemoveRanksFrom removes a worker's dp ranks from ranks on.
	RemoveRanksFrom(workerID uint64, ranks uint32)
	// Workers lists the pairs indexed, sorted.
	Workers() []kvevents.WorkerKey
}

var (
	_ Index = (*Memory)(nil)
	_ Index = (*Holding)(nil)
)

// Fate is what became of an event given to Index.Apply, read from its
// error by FateOf.
type Fate uint8

// The fates of an applied event.
const (
	Applied       Fate = iota // indexed
	Held                      // waits in the holding area for its worker to register (ErrHeld)
	Dropped                   // its unregistered worker's events were dropped for want of room (*UnknownWorkerError)
	RankRefused               // its dp rank is not its worker's (*RankError)
	UnknownParent             // its parent block is unknown: dropped, as Dynamo's indexer does (ErrUnknownParent)
	UnknownTier               // a tier this version does not rank: counted and ignored (ErrUnknownTier)
	Invalid                   // not a valid event (ErrBadEvent)
	Failed                    // any other error
)

// FateOf is the one reading of an Apply error: ingestion, and the holding
// area when it promotes a worker's held events, both act on its answer.
func FateOf(err error) Fate {
	switch {
	case err == nil:
		return Applied
	case errors.Is(err, ErrHeld):
		return Held
	case errors.Is(err, ErrUnknownWorker):
		return Dropped
	case errors.Is(err, ErrRankOutOfRange):
		return RankRefused
	case errors.Is(err, ErrUnknownParent):
		return UnknownParent
	case errors.Is(err, ErrUnknownTier):
		return UnknownTier
	case errors.Is(err, ErrBadEvent):
		return Invalid
	}
	return Failed
}

// Sampled reports whether err, an event Dropped or RankRefused, is the
// one message in HoldingConfig.SampleEvery to dead-letter.
func Sampled(err error) bool {
	var uw *UnknownWorkerError
	if errors.As(err, &uw) {
		return uw.Sample
	}
	var re *RankError
	return errors.As(err, &re) && re.Sample
}
