package registry

import (
	"cmp"
	"slices"
	"sync"

	"github.com/hintstream/hintstream/schemas"
)

// Choice cost independent of the registry's size: a wake-up needs the
// workers of one model, and listing and sorting every record per choice
// made each wake-up cost O(registry) (14 ms with 50,000 records of other
// models). So the registry keeps its records grouped by model, updated
// from each Change, and a sorted candidate list per model built once
// after that model's last change and shared by every reader until the
// next: a change to one model never costs another model's readers.

// modelView is the registry's records grouped by model.
type modelView struct {
	mu      sync.RWMutex
	byModel map[string]map[uint64]*schemas.WorkerRecord
	// lists caches WorkersFor's answer per model (its workers and those
	// serving every model), sorted by worker id; absent: rebuild. Only
	// models with workers of their own get an entry, so request-supplied
	// model names cannot grow it.
	lists map[string][]schemas.WorkerRecord
	all   []schemas.WorkerRecord // every record, sorted; nil: rebuild
}

func newModelView() *modelView {
	return &modelView{byModel: map[string]map[uint64]*schemas.WorkerRecord{}, lists: map[string][]schemas.WorkerRecord{}}
}

// apply follows one change.
func (v *modelView) apply(c Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c.Previous != nil {
		if m := v.byModel[c.Previous.Model]; m != nil {
			delete(m, c.WorkerID)
			if len(m) == 0 {
				delete(v.byModel, c.Previous.Model)
			}
		}
		v.stale(c.Previous.Model)
	}
	if c.Record != nil {
		m := v.byModel[c.Record.Model]
		if m == nil {
			m = map[uint64]*schemas.WorkerRecord{}
			v.byModel[c.Record.Model] = m
		}
		m[c.WorkerID] = c.Record
		v.stale(c.Record.Model)
	}
}

// stale drops the cached lists model's change affects. v.mu is held.
func (v *modelView) stale(model string) {
	v.all = nil
	if model == "" { // serves every model: in every list
		clear(v.lists)
		return
	}
	delete(v.lists, model)
}

// workersFor returns the records serving model: its own and those with
// no model, sorted by worker id; every record when model is "".
func (v *modelView) workersFor(model string) []schemas.WorkerRecord {
	v.mu.RLock()
	var (
		out []schemas.WorkerRecord
		ok  bool
	)
	key := model
	if model == "" {
		out, ok = v.all, v.all != nil
	} else {
		if len(v.byModel[model]) == 0 {
			key = "" // none of its own: the model-less workers (lists[""])
		}
		out, ok = v.lists[key]
	}
	v.mu.RUnlock()
	if ok {
		return out
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if model == "" {
		if v.all == nil {
			v.all = v.collect(v.byModelsAll()...)
		}
		return v.all
	}
	if out, ok = v.lists[key]; !ok { // another reader may have built it
		if key == "" {
			out = v.collect(v.byModel[""])
		} else {
			out = v.collect(v.byModel[key], v.byModel[""])
		}
		v.lists[key] = out
	}
	return out
}

func (v *modelView) byModelsAll() []map[uint64]*schemas.WorkerRecord {
	ms := make([]map[uint64]*schemas.WorkerRecord, 0, len(v.byModel))
	for _, m := range v.byModel {
		ms = append(ms, m)
	}
	return ms
}

// collect copies the records of ms, sorted by worker id; never nil, so
// an empty list is cached too.
func (v *modelView) collect(ms ...map[uint64]*schemas.WorkerRecord) []schemas.WorkerRecord {
	out := []schemas.WorkerRecord{}
	for _, m := range ms {
		for _, r := range m {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b schemas.WorkerRecord) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	return out
}

// WorkersFor returns the valid records serving model (those naming it
// and those naming none), sorted by worker id; every record when model
// is "". The slice and the records' slices are shared: do not modify. Its
// cost does not grow with the records of other models.
func (r *Registry) WorkersFor(model string) []schemas.WorkerRecord {
	return r.models.workersFor(model)
}
