package index

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe/metrics"
)

// Registered workers first: the index tracks at most 65,536 (worker, dp
// rank) pairs, and anyone who can publish on kv.events.> could fill it
// with ids that serve nothing, after which a real worker is never
// indexed. So only workers the registry lists reach the index. Events of
// any other id wait in a small holding area, because a worker usually
// starts publishing before its record is written; when the record
// appears, the worker's held events are applied in their order, then its
// live ones. The holding area keeps the most recently heard
// HoldingConfig.MaxWorkers ids (least recently heard evicted first), each
// with at most MaxBlocksPerWorker blocks; what falls out is counted in
// kv_events.dropped|unknown worker, and one message in
// DefaultHoldingSampleEvery of those is dead-lettered with that reason,
// so an operator can find the publisher.

// ReasonUnknownWorker labels events dropped because their worker is not
// registered and the holding area had no room for them.
const ReasonUnknownWorker = metrics.ReasonUnknownWorker

// ReasonRankOutOfRange labels events and load reports refused because
// their dp rank is not one of their worker's: a worker's dp ranks are its
// record's hint_endpoints (index = dp rank; at most --max-dp-ranks), and
// no other rank can ever be chosen. Without this, one registered worker
// publishing on dp ranks 0..65535 filled the index's pair table and
// locked every later worker out.
const ReasonRankOutOfRange = metrics.ReasonRankOutOfRange

var (
	// ErrHeld means an event's worker is not registered (yet): the event
	// waits in the holding area and is applied if the worker registers.
	ErrHeld = errors.New("index: event held until its worker registers")
	// ErrUnknownWorker means events of unregistered workers were dropped
	// for want of room; see UnknownWorkerError.
	ErrUnknownWorker = errors.New("index: events of an unregistered worker dropped")
	// ErrRankOutOfRange means an event or load report names a dp rank
	// its registered worker does not have; see RankError.
	ErrRankOutOfRange = errors.New("index: dp rank beyond the worker's hint endpoints")
)

// RankError reports an event refused for its dp rank (ReasonRankOutOfRange).
// Sample says this message is the one in HoldingConfig.SampleEvery to
// dead-letter.
type RankError struct {
	Key    kvevents.WorkerKey
	Ranks  uint32 // the worker's registered dp ranks
	Sample bool
}

func (e *RankError) Error() string {
	return fmt.Sprintf("%s: worker %d dp rank %d, registered with %d", ErrRankOutOfRange.Error(),
		e.Key.WorkerID, e.Key.DpRank, e.Ranks)
}

// Unwrap makes errors.Is(err, ErrRankOutOfRange) hold.
func (e *RankError) Unwrap() error { return ErrRankOutOfRange }

// UnknownWorkerError reports events dropped from (or refused by) the
// holding area. Held says the event being applied was itself kept (it
// took the place of an evicted worker's); Sample says this message is the
// one to dead-letter.
type UnknownWorkerError struct {
	Dropped int
	Held    bool
	Sample  bool
}

func (e *UnknownWorkerError) Error() string {
	return fmt.Sprintf("%s (%d)", ErrUnknownWorker.Error(), e.Dropped)
}

// Unwrap makes errors.Is(err, ErrUnknownWorker) hold.
func (e *UnknownWorkerError) Unwrap() error { return ErrUnknownWorker }

// Holding is a decorator of an Index, the gate in front of it: events of
// registered workers pass through, others are held (see the comment at
// the top of this file). It is itself an Index. Register and Unregister follow the registry. Safe for concurrent
// use: events of one worker must come from one goroutine at a time, as
// the sharded state consumer delivers them.
type Holding struct {
	ix       Index
	cfg      HoldingConfig
	counters *metrics.Families

	// mu is held for reading while an event of a registered worker is
	// applied, and for writing while a worker is registered (its held
	// events applied) or unregistered (its blocks removed): so no live
	// event overtakes the held ones, and none lands after the removal.
	mu sync.RWMutex
	// registered maps a registered worker to its dp ranks (its record's
	// hint_endpoints).
	registered map[uint64]uint32
	held       map[uint64]*list.Element // -> *heldWorker, in lru
	lru        list.List                // front: most recently heard
	dropMsgs   uint64                   // messages with drops, for sampling
	rankMsgs   atomic.Uint64            // events refused for their rank, for sampling
}

type heldWorker struct {
	id     uint64
	events []kvevents.Event
	blocks int
}

// NewHolding returns a gate in front of ix; counters may be nil.
func NewHolding(ix Index, cfg HoldingConfig, counters *metrics.Families) *Holding {
	if counters == nil {
		counters = metrics.New()
	}
	return &Holding{ix: ix, cfg: cfg.WithDefaults(), counters: counters,
		registered: map[uint64]uint32{}, held: map[uint64]*list.Element{}}
}

// LastEventID is the index's: held events have not been applied, so they
// count for nothing here.
func (h *Holding) LastEventID(k kvevents.WorkerKey) (uint64, bool) { return h.ix.LastEventID(k) }

// eventBlocks is what an event costs against MaxBlocksPerWorker.
func eventBlocks(ev *kvevents.Event) int { return max(len(ev.Blocks)+len(ev.Removed), 1) }

// Apply applies ev to the index if its worker is registered. Otherwise it
// holds ev and returns ErrHeld, or an *UnknownWorkerError when events had
// to be dropped (ev's own worker's, or the least recently heard
// worker's to make room).
func (h *Holding) Apply(ev kvevents.Event) error {
	id := ev.Worker.WorkerID
	h.mu.RLock()
	if ranks, ok := h.registered[id]; ok {
		var err error
		if ev.Worker.DpRank < ranks {
			err = h.ix.Apply(ev)
		} else {
			err = h.refuseRank(ev.Worker, ranks)
		}
		h.mu.RUnlock()
		return err
	}
	h.mu.RUnlock()

	h.mu.Lock()
	defer h.mu.Unlock()
	if ranks, ok := h.registered[id]; ok { // registered meanwhile
		if ev.Worker.DpRank >= ranks {
			return h.refuseRank(ev.Worker, ranks)
		}
		return h.ix.Apply(ev)
	}
	cost := eventBlocks(&ev)
	if el, ok := h.held[id]; ok {
		w := el.Value.(*heldWorker)
		h.lru.MoveToFront(el)
		if w.blocks+cost > h.cfg.MaxBlocksPerWorker {
			return h.dropped(1, false)
		}
		w.events = append(w.events, ev.Clone()) // ev's memory is the decoder's (see Index)
		w.blocks += cost
		h.counters.KVEventsHeld.Inc()
		return ErrHeld
	}
	if cost > h.cfg.MaxBlocksPerWorker {
		return h.dropped(1, false)
	}
	evicted := 0
	for len(h.held) >= h.cfg.MaxWorkers {
		w := h.lru.Remove(h.lru.Back()).(*heldWorker)
		delete(h.held, w.id)
		evicted += len(w.events)
	}
	h.held[id] = h.lru.PushFront(&heldWorker{id: id, events: []kvevents.Event{ev.Clone()}, blocks: cost})
	h.counters.KVEventsHeld.Inc()
	if evicted > 0 {
		return h.dropped(evicted, true)
	}
	return ErrHeld
}

// dropped counts n dropped events and says whether this message is the
// sample to dead-letter. h.mu is held.
func (h *Holding) dropped(n int, held bool) error {
	h.counters.KVEventsDropped.Add(ReasonUnknownWorker, uint64(n))
	sample := h.dropMsgs%uint64(h.cfg.SampleEvery) == 0
	h.dropMsgs++
	return &UnknownWorkerError{Dropped: n, Held: held, Sample: sample}
}

// refuseRank counts an event refused for its dp rank. h.mu is held
// (either way: the sampling count is atomic).
func (h *Holding) refuseRank(k kvevents.WorkerKey, ranks uint32) error {
	h.counters.KVEventsDropped.Inc(ReasonRankOutOfRange)
	sample := (h.rankMsgs.Add(1)-1)%uint64(h.cfg.SampleEvery) == 0
	return &RankError{Key: k, Ranks: ranks, Sample: sample}
}

// Admits reports whether k is a registered worker's dp rank: only those
// are kept in the load table (and the index).
func (h *Holding) Admits(k kvevents.WorkerKey) (ok bool, reason string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ranks, registered := h.registered[k.WorkerID]
	switch {
	case !registered:
		return false, ReasonUnknownWorker
	case k.DpRank >= ranks:
		return false, ReasonRankOutOfRange
	}
	return true, ""
}

// Register lets id's events on dp ranks 0..ranks-1 into the index, first
// the held ones in their order; it returns how many held events were
// applied. ranks is the number of the worker record's hint_endpoints (a
// record lists at most --max-dp-ranks). Called again with fewer ranks, it
// forgets the ranks no longer listed. Idempotent.
func (h *Holding) Register(id uint64, ranks int) int {
	n := uint32(min(max(ranks, 0), math.MaxUint32))
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.registered[id]; ok && n < prev {
		h.ix.RemoveRanksFrom(id, n)
	}
	h.registered[id] = n
	el, ok := h.held[id]
	if !ok {
		return 0
	}
	h.lru.Remove(el)
	delete(h.held, id)
	w := el.Value.(*heldWorker)
	for _, ev := range w.events {
		if ev.Worker.DpRank >= n {
			h.counters.KVEventsDropped.Inc(ReasonRankOutOfRange)
			continue
		}
		switch err := h.ix.Apply(ev); {
		case err == nil:
		case errors.Is(err, ErrUnknownParent):
			h.counters.KVEventsUnknownParent.Inc()
		default:
			h.counters.KVEventsApplyErrors.Inc()
		}
	}
	h.counters.KVEventsPromoted.Add(uint64(len(w.events)))
	return len(w.events)
}

// Unregister removes id's blocks from the index; its later events are
// held again.
func (h *Holding) Unregister(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.registered, id)
	h.ix.RemoveWorker(id)
}

// RemoveWorker is Unregister: the worker's blocks go, and its later
// events are held again.
func (h *Holding) RemoveWorker(id uint64) { h.Unregister(id) }

// RemoveRanksFrom removes id's dp ranks from ranks on from the index; the
// registry's record still says which ranks are let in.
func (h *Holding) RemoveRanksFrom(id uint64, ranks uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ix.RemoveRanksFrom(id, ranks)
}

// Workers are the index's.
func (h *Holding) Workers() []kvevents.WorkerKey { return h.ix.Workers() }

// Registered reports whether id's events go to the index.
func (h *Holding) Registered(id uint64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.registered[id]
	return ok
}

// Prune removes from the index every worker that is not registered (a
// snapshot's, or one that left while no instance ran) and returns their
// ids, and every dp rank a registered worker does not have (a flood a
// snapshot kept). Call it once the registry is loaded.
func (h *Holding) Prune() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []uint64
	excess := map[uint64]uint32{}
	defer func() {
		for id, ranks := range excess {
			h.ix.RemoveRanksFrom(id, ranks)
		}
	}()
	for _, k := range h.ix.Workers() {
		if ranks, ok := h.registered[k.WorkerID]; ok {
			if k.DpRank >= ranks {
				excess[k.WorkerID] = ranks
			}
			continue
		}
		if len(gone) == 0 || gone[len(gone)-1] != k.WorkerID {
			gone = append(gone, k.WorkerID)
			h.ix.RemoveWorker(k.WorkerID)
		}
	}
	return gone
}

// HoldingStats is the holding area's current size.
type HoldingStats struct {
	Workers int // unregistered ids with held events
	Events  int
	Blocks  int
}

// Stats returns the holding area's current size.
func (h *Holding) Stats() HoldingStats {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := HoldingStats{Workers: len(h.held)}
	for _, el := range h.held {
		w := el.Value.(*heldWorker)
		s.Events += len(w.events)
		s.Blocks += w.blocks
	}
	return s
}
