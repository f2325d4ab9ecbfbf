package routing

import (
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

// NewLoadTable returns an empty table.
func NewLoadTable() *LoadTable {
	return &LoadTable{m: map[kvevents.WorkerKey]schemas.ActiveLoad{}}
}

// Update merges a report: counters it does not carry keep their previous
// value, because workers and schedulers report different halves of
// Dynamo's ActiveLoad.
func (t *LoadTable) Update(l schemas.ActiveLoad) {
	k := kvevents.WorkerKey{WorkerID: l.WorkerID, DpRank: l.DpRank}
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.m[k]
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
