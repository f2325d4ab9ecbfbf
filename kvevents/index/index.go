package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

var (
	// ErrUnknownParent means a stored event names a parent block the
	// worker never stored (or already removed) on any tier. The whole event
	// is dropped, as Dynamo's radix tree drops it; Stats.UnknownParent
	// counts these (Stats.DroppedFull instead if the worker has had blocks
	// dropped because the index was full, since the parent is then most
	// likely one of those).
	ErrUnknownParent = errors.New("index: parent block unknown")
	// ErrBadEvent means an Event has no valid kind.
	ErrBadEvent = errors.New("index: malformed event")
	// ErrTooManyWorkers means 65,536 (worker, dp rank) pairs are already
	// tracked; RemoveWorker frees room.
	ErrTooManyWorkers = errors.New("index: too many workers")
)

// DefaultShards is the number of parts each page of the block lookup is
// split into.
const DefaultShards = 64

// maxShardBits caps WithShards.
const maxShardBits = 12

type options struct {
	shardBits    uint8
	logger       *slog.Logger
	excludeStale bool
	maxBlocks    int64
	capacity     int64
	jump         int
}

// Option configures New.
type Option func(*options)

// WithShards sets the number of parts of each 64-worker page of the block
// lookup, rounded up to a power of two (at most 4,096). Each part grows
// alone, so a resize copies one part and pauses writers (never readers)
// that long. Default DefaultShards; n <= 0 keeps the default.
func WithShards(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.shardBits = uint8(min(bits.Len(uint(n-1)), maxShardBits))
		}
	}
}

// WithLogger sets the logger: event id gaps at Warn, resynchronisation at
// Info, dropped events at Debug (a misbehaving publisher can emit many).
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithExcludeStale leaves stale workers (see Memory.Stale) out of Overlap.
// Default false: a router reading the same bus misses the same events and
// still routes to the worker, and hints must follow the router's choice.
func WithExcludeStale(exclude bool) Option {
	return func(o *options) { o.excludeStale = exclude }
}

// WithJump sets Overlap's probe stride: it looks up a prompt's first
// block and every n-th block after it, and scans the blocks between two
// probes only when the later one lost workers, as Dynamo's positional
// indexer does (its jump search). That assumes each worker's device
// blocks are prefix-closed, as engines that evict leaves first keep
// them and as Dynamo's RadixTree.find_matches also assumes; a worker
// missing a block between two probes that find it is credited through
// that hole. n <= 1 looks up every block, so each worker stops at its
// first missing block even past a hole. Default DefaultJump.
func WithJump(n int) Option {
	return func(o *options) { o.jump = max(n, 1) }
}

// WithMaxBlocks bounds the device (block, worker) entries of the index;
// once n are held, newly stored device blocks are dropped (counted in
// Stats.DroppedFull) until removals make room. Dropping the new rather
// than evicting the old is O(1), keeps memory predictable, and never
// takes away a prefix that hints already rely on; since stored events
// come in prefix order, what is kept stays prefix-closed. Default 0:
// unbounded.
func WithMaxBlocks(n int64) Option {
	return func(o *options) { o.maxBlocks = max(n, 0) }
}

// WithCapacity pre-sizes the index for n device (block, worker) entries
// per 64 (worker, dp rank) pairs, the index's page (for up to 64 pairs,
// the cluster's total), so that an index sized for its cluster does no
// table growth while it fills: each part of a page's lookup is allocated
// for its share of n blocks at its first store, and each pair's device
// table for n/64 at its first store. That costs about 60 bytes per entry
// of n (30 in each table) whether used or not. Tables still grow past the
// hint (a pair holding more than n/64 grows its own table), and never
// shrink below it. Default 0: tables start small and grow by 1.5x.
func WithCapacity(n int64) Option {
	return func(o *options) { o.capacity = max(n, 0) }
}

// Stats is a snapshot of an Memory's size and its dropped input.
type Stats struct {
	Workers         int    // (worker, dp rank) pairs known
	Entries         int64  // device (block, worker) entries; = DeviceBlocks
	DeviceBlocks    int64  // (worker, block) pairs held on device
	OtherTierBlocks int64  // (worker, block) pairs held on other tiers
	Hashes          int    // device sequence hashes held, once per 64-worker page holding them
	UnknownParent   uint64 // stored events dropped for an unknown parent
	UnknownRemovals uint64 // removed hashes that were not held
	Cleared         uint64 // cleared events applied
	Gaps            uint64 // event ids that skipped ahead
	OutOfOrder      uint64 // events older than the newest id seen (applied anyway)
	StaleWorkers    int    // (worker, dp rank) pairs with missing events
	DroppedFull     uint64 // device blocks not indexed because of WithMaxBlocks
	UnknownTier     uint64 // events ignored for a storage tier none of Dynamo's
}

// Memory maps Dynamo sequence hashes to the workers holding those blocks
// on device, fed by Events, and answers Overlap.
//
// Layout: (worker, dp rank) pairs get slots; each 64 slots form a page,
// whose lookup is an open-addressing table from sequence hash to a 64-bit
// bitmap of the slots holding it. Overlap walks the prompt once per page
// with a bitmap of surviving slots, probing every 32nd block (WithJump)
// and scanning between probes only where slots were lost, issuing
// batches of independent lookups so that their cache misses overlap, and
// stops once no slot survives. Each pair also keeps a table from the engine's external hash
// to the sequence hash (for parent lookup and removals), so cleared
// events and RemoveWorker cost O(that pair's blocks), not O(index).
// Tables resize by 1.5x and stay 53-80% full: a device (block, worker)
// entry costs about 40-60 bytes (16 in each table, plus slack), less when
// workers share blocks, since the lookup holds one key per block and
// page. Two external hashes of one pair with the same sequence hash are
// not reference counted: removing either unindexes the block for the pair.
//
// Concurrency: Overlap takes no lock on the lookup: readers load words
// atomically from tables whose entries never move while published (see
// bitTable). Events of one pair are serialised; lookup changes from all
// pairs are serialised under one writer lock, held per event (and per
// 1,024 blocks of a clear), never across a reader. So an Overlap racing
// writers sees each block as of some moment during its walk.
//
// Ordering: each pair's event ids are checked (id 0 means none). An id
// one past the last, or equal to it (engine batches share an id), is in
// order. A higher id is a gap: counted, logged once, and the pair is
// marked stale, as it may hold blocks the index never heard of or have
// lost blocks the index still lists. A lower id is out of order: counted
// and applied anyway (stores and removals are idempotent). A stale pair
// is in sync again after a cleared event for its device tier, or once
// every id it skipped arrives late (up to 4 gaps are tracked; more, and
// only a clear resyncs it). Stale pairs still count in Overlap unless
// WithExcludeStale: a router on the same bus saw the same gap.
//
// Blocks are keyed by sequence hash chained from the events' local
// (tokens) hashes, never by the engine's own hash, so PromptHashes of a
// prompt finds them.
type Memory struct {
	log          *slog.Logger
	excludeStale bool
	jump         int // Overlap's probe stride (WithJump)
	maxBlocks    int64
	shardBits    uint8
	pageFloor    int // home slots of each page shard (WithCapacity)
	extFloor     int // home slots of each pair's device table (WithCapacity)

	// mu guards the worker table and slot assignment. Overlap holds it
	// for reading across its walk, so that a slot it reads cannot be
	// freed and reused meanwhile.
	mu      sync.RWMutex
	workers map[kvevents.WorkerKey]*workerState
	// live mirrors workers for Apply's lookup, which then takes no lock:
	// a read lock per event is an atomic add on a line that every apply
	// shard and Overlap share, so it moved between cores on each event.
	// sync.Map's Load only reads. Written under mu, after
	// workers; a key missing from it is looked up in workers under mu.
	live  sync.Map             // kvevents.WorkerKey -> *workerState
	keys  []kvevents.WorkerKey // slot -> key, valid while the slot is assigned
	free  []slot               // sorted, so slots stay dense in few pages
	pages []*page              // never shrinks; a page is reused with its slots

	// wmu serialises changes to the pages' lookups and to entries.
	wmu     sync.Mutex
	entries atomic.Int64 // written under wmu
	hashes  atomic.Int64 // written under wmu

	otherBlocks     atomic.Int64
	unknownParent   atomic.Uint64
	unknownRemovals atomic.Uint64
	cleared         atomic.Uint64
	gaps            atomic.Uint64
	outOfOrder      atomic.Uint64
	stale           atomic.Int64
	droppedFull     atomic.Uint64
	unknownTier     atomic.Uint64
}

// workerState is one (worker, dp rank).
type workerState struct {
	key  kvevents.WorkerKey
	slot slot
	page *page
	bit  uint64

	mu          sync.Mutex
	dead        bool // removed from the Memory; re-resolve and retry
	order       eventOrder
	droppedFull bool // blocks dropped for WithMaxBlocks since the last device clear
	device      extTable
	other       map[schemas.StorageTier]*extTable
	lower       map[schemas.StorageTier]lowerSeqs // other's sequence hashes, for LowerOverlap
	lowerN      atomic.Int64                      // external hashes in other; read without mu
	seqs        []uint64                          // scratch
}

// New returns an empty Memory.
func New(opts ...Option) *Memory {
	o := options{shardBits: uint8(bits.Len(DefaultShards - 1)), logger: slog.Default(), jump: DefaultJump}
	for _, opt := range opts {
		opt(&o)
	}
	ix := &Memory{
		log:          o.logger,
		excludeStale: o.excludeStale,
		jump:         o.jump,
		maxBlocks:    o.maxBlocks,
		shardBits:    o.shardBits,
		workers:      make(map[kvevents.WorkerKey]*workerState),
	}
	if o.capacity > 0 {
		// Capped so that a wild hint cannot overflow int or ask for more
		// than a table can index.
		c := int(min(o.capacity, 1<<40))
		ix.pageFloor = slotsFor(c >> o.shardBits)
		ix.extFloor = slotsFor(c / pageSlots)
	}
	return ix
}

// Apply applies one event of ev.Worker. A stored event whose parent is
// unknown is dropped whole and returns an error wrapping
// ErrUnknownParent. Removing a block the worker does not hold is counted
// in Stats.UnknownRemovals and otherwise ignored. Cleared drops every
// block of the worker on the event's tier. Blocks on tiers other than
// device are tracked (for parent lookup, Stats and LowerOverlap) but never
// count toward Overlap. An event of a tier none of Dynamo's is ignored and
// returns an error wrapping ErrUnknownTier (counted in Stats.UnknownTier).
// Event ids are checked for order (see Memory) but never cause an event to
// be rejected.
func (ix *Memory) Apply(ev kvevents.Event) error {
	switch ev.Kind {
	case schemas.KindStored, schemas.KindRemoved, schemas.KindCleared:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrBadEvent, ev.Kind)
	}
	unknownTier := ev.Tier != "" && !ev.Tier.Valid()
	for retry := false; ; retry = true {
		lookup := ix.worker
		if retry {
			// live may still hold the dead pair (install swaps it after
			// marking the old ones dead): ask workers, under mu.
			lookup = ix.workerLocked
		}
		st, err := lookup(ev.Worker)
		if err != nil {
			return err
		}
		st.mu.Lock()
		if st.dead {
			// RemoveWorker won the race; this event starts a new life.
			st.mu.Unlock()
			continue
		}
		ix.checkOrder(st, ev.EventID)
		if unknownTier {
			// Its id still counts, or the next event would look like a gap.
			st.mu.Unlock()
			ix.unknownTier.Add(1)
			ix.log.Debug("kvevents: event of an unknown storage tier ignored",
				"worker_id", ev.Worker.WorkerID, "dp_rank", ev.Worker.DpRank, "tier", string(ev.Tier[:min(len(ev.Tier), 40)]))
			return fmt.Errorf("%w %.40q", ErrUnknownTier, ev.Tier)
		}
		switch ev.Kind {
		case schemas.KindStored:
			err = ix.storeLocked(st, &ev)
		case schemas.KindRemoved:
			ix.removeLocked(st, &ev)
		case schemas.KindCleared:
			ix.clearLocked(st, ev.Tier)
			ix.cleared.Add(1)
			if onDevice(&ev) {
				was := st.order.stale
				st.order.resync(ev.EventID)
				ix.publishStale(st, was)
			}
		}
		st.mu.Unlock()
		return err
	}
}

func (ix *Memory) checkOrder(st *workerState, id uint64) {
	was := st.order.stale
	v, expected := st.order.observe(id)
	switch v {
	case gap:
		ix.gaps.Add(1)
		level := slog.LevelWarn
		if was {
			level = slog.LevelDebug // this stale spell is already reported
		}
		ix.log.Log(context.Background(), level, "kvevents: event id gap, worker marked stale",
			"worker_id", st.key.WorkerID, "dp_rank", st.key.DpRank, "expected", expected, "got", id)
	case outOfOrder:
		ix.outOfOrder.Add(1)
	}
	ix.publishStale(st, was)
}

// publishStale publishes a change of st's staleness from was. st.mu is
// held.
func (ix *Memory) publishStale(st *workerState, was bool) {
	switch now := st.order.stale; {
	case now && !was:
		st.page.stale.Or(st.bit)
		ix.stale.Add(1)
	case was && !now:
		st.page.stale.And(^st.bit)
		ix.stale.Add(-1)
		if !st.dead {
			ix.log.Info("kvevents: worker events in sync again",
				"worker_id", st.key.WorkerID, "dp_rank", st.key.DpRank, "event_id", st.order.last)
		}
	}
}

// worker returns the state of k, creating it and assigning a slot.
func (ix *Memory) worker(k kvevents.WorkerKey) (*workerState, error) {
	if st, ok := ix.live.Load(k); ok {
		return st.(*workerState), nil
	}
	return ix.workerLocked(k)
}

// workerLocked is worker's lookup in workers, under mu; it adds k if
// absent.
func (ix *Memory) workerLocked(k kvevents.WorkerKey) (*workerState, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if st := ix.workers[k]; st != nil {
		return st, nil
	}
	var s slot
	switch {
	case len(ix.free) > 0:
		s = ix.free[0]
		ix.free = ix.free[1:]
		ix.keys[s] = k
	case len(ix.keys) < maxSlots:
		s = slot(len(ix.keys))
		ix.keys = append(ix.keys, k)
	default:
		return nil, fmt.Errorf("%w: cannot add worker %d dp %d", ErrTooManyWorkers, k.WorkerID, k.DpRank)
	}
	p := int(s) / pageSlots
	if p == len(ix.pages) {
		ix.pages = append(ix.pages, newPage(ix.shardBits, ix.pageFloor))
	}
	st := &workerState{key: k, slot: s, page: ix.pages[p], bit: 1 << (s % pageSlots)}
	st.device.floor = ix.extFloor
	st.page.assigned |= st.bit
	ix.workers[k] = st
	ix.live.Store(k, st)
	return st, nil
}

// Overlap returns, for each (worker, dp rank) holding the prompt's first
// block on device, how many leading blocks of seqHashes (the prompt's
// sequence hashes, e.g. from PromptHashes, whose cost is separate) it
// holds: the count stops at its first missing block (with the default
// WithJump, at the first one a probe or a scan finds: see WithJump).
// Workers holding no leading block are absent; an empty prompt gives an
// empty map.
func (ix *Memory) Overlap(seqHashes []uint64) map[kvevents.WorkerKey]int {
	out := map[kvevents.WorkerKey]int{}
	ix.OverlapInto(seqHashes, out)
	return out
}

// OverlapInto is Overlap into out, which it clears first: a caller
// choosing workers for one prompt after another reuses one map instead
// of allocating one per prompt.
func (ix *Memory) OverlapInto(seqHashes []uint64, out map[kvevents.WorkerKey]int) {
	clear(out)
	if len(seqHashes) == 0 {
		return
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for pi, pg := range ix.pages {
		alive := pg.assigned
		if ix.excludeStale {
			alive &^= pg.stale.Load()
		}
		if alive == 0 {
			continue
		}
		keys := ix.keys[pi*pageSlots:]
		record := func(b uint64, depth int) {
			for ; b != 0; b &= b - 1 {
				out[keys[bits.TrailingZeros64(b)]] = depth
			}
		}
		record(pg.walk(seqHashes, alive, ix.jump, record), len(seqHashes))
	}
}

// RemoveWorker forgets every dp rank of workerID and all their blocks.
func (ix *Memory) RemoveWorker(workerID uint64) {
	ix.removePairs(func(k kvevents.WorkerKey) bool { return k.WorkerID == workerID })
}

// RemoveRanksFrom forgets workerID's dp ranks from ranks up, and their
// blocks: ranks its registry record no longer lists.
func (ix *Memory) RemoveRanksFrom(workerID uint64, ranks uint32) {
	ix.removePairs(func(k kvevents.WorkerKey) bool { return k.WorkerID == workerID && k.DpRank >= ranks })
}

// removePairs forgets the pairs gone reports and all their blocks.
func (ix *Memory) removePairs(drop func(kvevents.WorkerKey) bool) {
	ix.mu.Lock()
	var gone []*workerState
	for k, st := range ix.workers {
		if drop(k) {
			gone = append(gone, st)
			delete(ix.workers, k)
			ix.live.Delete(k)
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
		was := st.order.stale
		st.order.resync(0)
		ix.publishStale(st, was)
		st.mu.Unlock()
	}
	// Only now, with no entry left naming them, may the slots be reused.
	ix.mu.Lock()
	for _, st := range gone {
		st.page.assigned &^= st.bit
		i, _ := slices.BinarySearch(ix.free, st.slot)
		ix.free = slices.Insert(ix.free, i, st.slot)
	}
	ix.mu.Unlock()
}

// Workers returns the known (worker, dp rank) pairs, sorted.
func (ix *Memory) Workers() []kvevents.WorkerKey {
	ix.mu.RLock()
	out := make([]kvevents.WorkerKey, 0, len(ix.workers))
	for k := range ix.workers {
		out = append(out, k)
	}
	ix.mu.RUnlock()
	sortKeys(out)
	return out
}

func sortKeys(ks []kvevents.WorkerKey) {
	slices.SortFunc(ks, func(a, b kvevents.WorkerKey) int {
		return cmp.Or(cmp.Compare(a.WorkerID, b.WorkerID), cmp.Compare(a.DpRank, b.DpRank))
	})
}

// Stale reports whether k has missed events since its last resync (see
// Memory); false for an unknown k.
func (ix *Memory) Stale(k kvevents.WorkerKey) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := ix.workers[k]
	return st != nil && st.page.stale.Load()&st.bit != 0
}

// StaleWorkers returns the stale (worker, dp rank) pairs, sorted.
func (ix *Memory) StaleWorkers() []kvevents.WorkerKey {
	var out []kvevents.WorkerKey
	ix.mu.RLock()
	for k, st := range ix.workers {
		if st.page.stale.Load()&st.bit != 0 {
			out = append(out, k)
		}
	}
	ix.mu.RUnlock()
	sortKeys(out)
	return out
}

// LastEventID returns the highest event id seen for k, counting events
// dropped for an unknown parent (0 if its events carry no id); ok is
// false if no event of k was seen.
func (ix *Memory) LastEventID(k kvevents.WorkerKey) (id uint64, ok bool) {
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
	return st.order.last, st.order.seen
}

// Stats returns a snapshot; counters are read one at a time, so under
// concurrent Apply they need not be mutually consistent.
func (ix *Memory) Stats() Stats {
	s := Stats{
		Entries:         ix.entries.Load(),
		OtherTierBlocks: ix.otherBlocks.Load(),
		Hashes:          int(ix.hashes.Load()),
		UnknownParent:   ix.unknownParent.Load(),
		UnknownRemovals: ix.unknownRemovals.Load(),
		Cleared:         ix.cleared.Load(),
		Gaps:            ix.gaps.Load(),
		OutOfOrder:      ix.outOfOrder.Load(),
		StaleWorkers:    int(ix.stale.Load()),
		DroppedFull:     ix.droppedFull.Load(),
		UnknownTier:     ix.unknownTier.Load(),
	}
	s.DeviceBlocks = s.Entries
	ix.mu.RLock()
	s.Workers = len(ix.workers)
	ix.mu.RUnlock()
	return s
}
