package routing

import (
	"errors"
	"sync"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// LoadTable keeps the latest load report of each (worker, dp rank). A
// worker that never reported has zero load.
type LoadTable struct {
	mu sync.RWMutex
	m  map[kvevents.WorkerKey]schemas.ActiveLoad
}

// MaxLoadEntries bounds the (worker, dp rank) pairs a LoadTable keeps:
// anyone who can publish on kv.load.> could otherwise grow it without end.
// 65,536 is 4,096 workers of 16 dp ranks each. Departed workers' entries
// are dropped (RemoveWorker), so the bound is on workers alive at once.
const MaxLoadEntries = 1 << 16

// ErrLoadTableFull is returned by Update for a new (worker, dp rank) when
// the table already holds MaxLoadEntries.
var ErrLoadTableFull = errors.New("routing: load table full")

// NewLoadTable returns an empty table.
func NewLoadTable() *LoadTable {
	return &LoadTable{m: map[kvevents.WorkerKey]schemas.ActiveLoad{}}
}

// Update merges a report: counters it does not carry keep their previous
// value, because workers and schedulers report different halves of
// Dynamo's ActiveLoad. A new pair past MaxLoadEntries is refused with
// ErrLoadTableFull.
func (t *LoadTable) Update(l schemas.ActiveLoad) error {
	k := kvevents.WorkerKey{WorkerID: l.WorkerID, DpRank: l.DpRank}
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.m[k]
	if !known && len(t.m) >= MaxLoadEntries {
		return ErrLoadTableFull
	}
	if l.ActiveDecodeBlocks == nil {
		l.ActiveDecodeBlocks = prev.ActiveDecodeBlocks
	}
	if l.ActivePrefillTokens == nil {
		l.ActivePrefillTokens = prev.ActivePrefillTokens
	}
	if l.KvUsedBlocks == nil {
		l.KvUsedBlocks = prev.KvUsedBlocks
	}
	t.m[k] = l
	return nil
}

// Get returns the load of k (zero when unknown).
func (t *LoadTable) Get(k kvevents.WorkerKey) schemas.ActiveLoad {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[k]
}

// RemoveWorker forgets every dp rank of a worker.
func (t *LoadTable) RemoveWorker(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.m {
		if k.WorkerID == id {
			delete(t.m, k)
		}
	}
}

// Len returns the number of (worker, dp rank) entries.
func (t *LoadTable) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}
