package kvevents

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hintstream/hintstream/schemas"
)

var (
	// ErrUnknownParent means a stored event names a parent block the
	// worker never stored (or already removed) on any tier. The whole event
	// is dropped, as Dynamo's radix tree drops it; Stats.UnknownParent
	// counts these.
	ErrUnknownParent = errors.New("kvevents: parent block unknown")
	// ErrBadEvent means an Event has no valid kind or an unknown tier.
	ErrBadEvent = errors.New("kvevents: malformed event")
	// ErrTooManyWorkers means 65,536 (worker, dp rank) pairs are already
	// tracked; RemoveWorker frees room.
	ErrTooManyWorkers = errors.New("kvevents: too many workers")
)

// DefaultShards is the number of lock shards of the block lookup.
const DefaultShards = 64

type indexOptions struct {
	shards int
	logger *slog.Logger
}

// IndexOption configures NewIndex.
type IndexOption func(*indexOptions)

// WithShards sets the number of lock shards of the block lookup, rounded
// up to a power of two. Default DefaultShards; n <= 0 keeps the default.
func WithShards(n int) IndexOption {
	return func(o *indexOptions) {
		if n > 0 {
			o.shards = 1 << bits.Len(uint(n-1))
		}
	}
}

// WithLogger sets the logger for dropped events (Debug level, since a
// misbehaving publisher can emit many). Default slog.Default().
func WithLogger(l *slog.Logger) IndexOption {
	return func(o *indexOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// Stats is a snapshot of an Index's size and its dropped input.
type Stats struct {
	Workers         int    // (worker, dp rank) pairs known
	DeviceBlocks    int64  // (worker, block) pairs held on device
	OtherTierBlocks int64  // (worker, block) pairs held on other tiers
	Hashes          int    // distinct device sequence hashes in the lookup
	UnknownParent   uint64 // stored events dropped for an unknown parent
	UnknownRemovals uint64 // removed hashes that were not held
	Cleared         uint64 // cleared events applied
}

// Index maps Dynamo sequence hashes to the workers holding those blocks
// on device, fed by Events. It is safe for concurrent use: writers to
// one (worker, dp rank) are serialised; the block lookup is sharded by
// hash under RWMutexes, each held for one block at a time.
//
// Blocks are keyed by sequence hash chained from the events' local
// (tokens) hashes, never by the engine's own hash, so PromptHashes of a
// prompt finds them.
type Index struct {
	log    *slog.Logger
	shards []shard
	mask   uint64

	// mu guards the worker table. Overlap holds it for reading across its
	// walk, so that a slot it reads cannot be freed and reused meanwhile.
	mu      sync.RWMutex
	workers map[WorkerKey]*workerState
	keys    []WorkerKey // slot -> key, valid while the slot is assigned
	free    []slot

	deviceBlocks    atomic.Int64
	otherBlocks     atomic.Int64
	unknownParent   atomic.Uint64
	unknownRemovals atomic.Uint64
	cleared         atomic.Uint64
}

type shard struct {
	mu sync.RWMutex
	m  map[uint64]slotSet // sequence hash -> slots holding it on device
	_  [32]byte           // keep neighbouring shard locks off one cache line
}

// workerState is one (worker, dp rank). Its maps go from the engine's
// external hash to the Dynamo sequence hash, for parent lookup and
// removals.
type workerState struct {
	key  WorkerKey
	slot slot

	mu          sync.Mutex
	dead        bool // removed from the Index; re-resolve and retry
	device      map[uint64]uint64
	other       map[schemas.StorageTier]map[uint64]uint64
	lastEventID uint64
	seen        bool
}

// NewIndex returns an empty Index.
func NewIndex(opts ...IndexOption) *Index {
	o := indexOptions{shards: DefaultShards, logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	ix := &Index{
		log:     o.logger,
		shards:  make([]shard, o.shards),
		mask:    uint64(o.shards - 1),
		workers: make(map[WorkerKey]*workerState),
	}
	for i := range ix.shards {
		ix.shards[i].m = make(map[uint64]slotSet)
	}
	return ix
}

func (ix *Index) shard(seq uint64) *shard { return &ix.shards[seq&ix.mask] }

// Apply applies one event of ev.Worker. A stored event whose parent is
// unknown is dropped whole and returns an error wrapping
// ErrUnknownParent. Removing a block the worker does not hold is counted
// in Stats.UnknownRemovals and otherwise ignored. Cleared drops every
// block of the worker on the event's tier. Blocks on tiers other than
// device are tracked (for parent lookup and Stats) but never count toward
// Overlap. Event ids are recorded (LastEventID), not checked for order.
func (ix *Index) Apply(ev Event) error {
	switch ev.Kind {
	case schemas.KindStored, schemas.KindRemoved, schemas.KindCleared:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrBadEvent, ev.Kind)
	}
	if ev.Tier != "" && !ev.Tier.Valid() {
		return fmt.Errorf("%w: unknown storage tier %q", ErrBadEvent, ev.Tier)
	}
	for {
		st, err := ix.worker(ev.Worker)
		if err != nil {
			return err
		}
		st.mu.Lock()
		if st.dead {
			// RemoveWorker won the race; this event starts a new life.
			st.mu.Unlock()
			continue
		}
		st.lastEventID, st.seen = ev.EventID, true
		switch ev.Kind {
		case schemas.KindStored:
			err = ix.storeLocked(st, &ev)
		case schemas.KindRemoved:
			ix.removeLocked(st, &ev)
		case schemas.KindCleared:
			ix.clearLocked(st, ev.Tier)
			ix.cleared.Add(1)
		}
		st.mu.Unlock()
		return err
	}
}

// worker returns the state of k, creating it and assigning a slot.
func (ix *Index) worker(k WorkerKey) (*workerState, error) {
	ix.mu.RLock()
	st := ix.workers[k]
	ix.mu.RUnlock()
	if st != nil {
		return st, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if st := ix.workers[k]; st != nil {
		return st, nil
	}
	var s slot
	switch {
	case len(ix.free) > 0:
		s = ix.free[len(ix.free)-1]
		ix.free = ix.free[:len(ix.free)-1]
		ix.keys[s] = k
	case len(ix.keys) < maxSlots:
		s = slot(len(ix.keys))
		ix.keys = append(ix.keys, k)
	default:
		return nil, fmt.Errorf("%w: cannot add worker %d dp %d", ErrTooManyWorkers, k.WorkerID, k.DpRank)
	}
	st = &workerState{key: k, slot: s, device: make(map[uint64]uint64)}
	ix.workers[k] = st
	return st, nil
}

// tierMap returns the worker's map for tier, creating it if create.
func (st *workerState) tierMap(tier schemas.StorageTier, create bool) map[uint64]uint64 {
	if tier == "" || tier == schemas.TierDevice {
		return st.device
	}
	m := st.other[tier]
	if m == nil && create {
		if st.other == nil {
			st.other = make(map[schemas.StorageTier]map[uint64]uint64)
		}
		m = make(map[uint64]uint64)
		st.other[tier] = m
	}
	return m
}

// parentSeq finds the sequence hash of an external hash, in the event's
// own tier first: a block offloaded to another tier keeps its content, so
// a parent known on any tier of this worker chains correctly.
func (st *workerState) parentSeq(own map[uint64]uint64, ext uint64) (uint64, bool) {
	if seq, ok := own[ext]; ok {
		return seq, true
	}
	if seq, ok := st.device[ext]; ok {
		return seq, true
	}
	for _, m := range st.other {
		if seq, ok := m[ext]; ok {
			return seq, true
		}
	}
	return 0, false
}

func (ix *Index) storeLocked(st *workerState, ev *Event) error {
	m := st.tierMap(ev.Tier, true)
	var parent uint64
	chained := false
	if ev.ParentHash != nil {
		p, ok := st.parentSeq(m, *ev.ParentHash)
		if !ok {
			ix.unknownParent.Add(1)
			ix.log.Debug("kvevents: stored event dropped, parent unknown",
				"worker_id", st.key.WorkerID, "dp_rank", st.key.DpRank,
				"event_id", ev.EventID, "parent_hash", *ev.ParentHash)
			return fmt.Errorf("%w: worker %d dp %d event %d parent %d",
				ErrUnknownParent, st.key.WorkerID, st.key.DpRank, ev.EventID, *ev.ParentHash)
		}
		parent, chained = p, true
	}
	device := ev.onDevice()
	for _, b := range ev.Blocks {
		seq := b.LocalHash
		if chained {
			seq = NextSequenceHash(parent, b.LocalHash)
		}
		parent, chained = seq, true

		old, existed := m[b.ExternalHash]
		if existed && old == seq {
			continue
		}
		m[b.ExternalHash] = seq
		if !existed {
			ix.blockCounter(device).Add(1)
		}
		if device {
			// A re-stored external hash with new content no longer
			// holds the old block, as Dynamo's lookup overwrite implies.
			if existed {
				ix.unindex(old, st.slot)
			}
			ix.index(seq, st.slot)
		}
	}
	return nil
}

func (ix *Index) removeLocked(st *workerState, ev *Event) {
	m := st.tierMap(ev.Tier, false)
	device := ev.onDevice()
	for _, ext := range ev.Removed {
		seq, ok := m[ext]
		if !ok {
			ix.unknownRemovals.Add(1)
			continue
		}
		delete(m, ext)
		ix.blockCounter(device).Add(-1)
		if device {
			ix.unindex(seq, st.slot)
		}
	}
}

// clearLocked drops the worker's blocks on tier, or on every tier if
// tier is "all".
func (ix *Index) clearLocked(st *workerState, tier schemas.StorageTier) {
	if tier == "" || tier == schemas.TierDevice || tier == allTiers {
		for _, seq := range st.device {
			ix.unindex(seq, st.slot)
		}
		ix.deviceBlocks.Add(-int64(len(st.device)))
		st.device = make(map[uint64]uint64) // release the old buckets
	}
	for t, m := range st.other {
		if t == tier || tier == allTiers {
			ix.otherBlocks.Add(-int64(len(m)))
			delete(st.other, t)
		}
	}
}

// allTiers is an internal pseudo-tier for clearLocked.
const allTiers schemas.StorageTier = "\x00all"

func (ix *Index) blockCounter(device bool) *atomic.Int64 {
	if device {
		return &ix.deviceBlocks
	}
	return &ix.otherBlocks
}

func (ix *Index) index(seq uint64, s slot) {
	sh := ix.shard(seq)
	sh.mu.Lock()
	sh.m[seq] = sh.m[seq].add(s)
	sh.mu.Unlock()
}

func (ix *Index) unindex(seq uint64, s slot) {
	sh := ix.shard(seq)
	sh.mu.Lock()
	if set, ok := sh.m[seq]; ok {
		if set = set.remove(s); len(set) == 0 {
			delete(sh.m, seq)
		} else {
			sh.m[seq] = set
		}
	}
	sh.mu.Unlock()
}

// Overlap returns, for each (worker, dp rank) holding the prompt's first
// block on device, how many leading blocks of seqHashes it holds: the
// count stops at its first missing block. Workers holding no leading
// block are absent; an empty prompt gives an empty map.
func (ix *Index) Overlap(seqHashes []uint64) map[WorkerKey]int {
	if len(seqHashes) == 0 {
		return map[WorkerKey]int{}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()

	sh := ix.shard(seqHashes[0])
	sh.mu.RLock()
	alive := slices.Clone([]slot(sh.m[seqHashes[0]]))
	sh.mu.RUnlock()

	out := make(map[WorkerKey]int, len(alive))
	for i := 1; i < len(seqHashes) && len(alive) > 0; i++ {
		sh := ix.shard(seqHashes[i])
		sh.mu.RLock()
		alive = sh.m[seqHashes[i]].intersectInto(alive, func(s slot) { out[ix.keys[s]] = i })
		sh.mu.RUnlock()
	}
	for _, s := range alive {
		out[ix.keys[s]] = len(seqHashes)
	}
	return out
}

// RemoveWorker forgets every dp rank of workerID and all their blocks.
func (ix *Index) RemoveWorker(workerID uint64) {
	ix.mu.Lock()
	var gone []*workerState
	for k, st := range ix.workers {
		if k.WorkerID == workerID {
			gone = append(gone, st)
			delete(ix.workers, k)
		}
	}
	ix.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	for _, st := range gone {
		st.mu.Lock()
		st.dead = true
		ix.clearLocked(st, allTiers)
		st.mu.Unlock()
	}
	// Only now, with no entry left naming them, may the slots be reused.
	ix.mu.Lock()
	for _, st := range gone {
		ix.free = append(ix.free, st.slot)
	}
	ix.mu.Unlock()
}

// Workers returns the known (worker, dp rank) pairs, sorted.
func (ix *Index) Workers() []WorkerKey {
	ix.mu.RLock()
	out := make([]WorkerKey, 0, len(ix.workers))
	for k := range ix.workers {
		out = append(out, k)
	}
	ix.mu.RUnlock()
	slices.SortFunc(out, func(a, b WorkerKey) int {
		return cmp.Or(cmp.Compare(a.WorkerID, b.WorkerID), cmp.Compare(a.DpRank, b.DpRank))
	})
	return out
}

// LastEventID returns the event id of the last event applied for k
// (including one dropped for an unknown parent); ok is false if none.
func (ix *Index) LastEventID(k WorkerKey) (id uint64, ok bool) {
	ix.mu.RLock()
	st := ix.workers[k]
	ix.mu.RUnlock()
	if st == nil {
		return 0, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead {
		return 0, false
	}
	return st.lastEventID, st.seen
}

// Stats returns a snapshot; counters are read one at a time, so under
// concurrent Apply they need not be mutually consistent.
func (ix *Index) Stats() Stats {
	s := Stats{
		DeviceBlocks:    ix.deviceBlocks.Load(),
		OtherTierBlocks: ix.otherBlocks.Load(),
		UnknownParent:   ix.unknownParent.Load(),
		UnknownRemovals: ix.unknownRemovals.Load(),
		Cleared:         ix.cleared.Load(),
	}
	ix.mu.RLock()
	s.Workers = len(ix.workers)
	ix.mu.RUnlock()
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.mu.RLock()
		s.Hashes += len(sh.m)
		sh.mu.RUnlock()
	}
	return s
}
