package registry

import (
	"slices"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// Served is the models one member serves (`run --models`), the
// one definition `run` and `replay` share, so a replay of such a member
// makes its choices: it reads only those models' requests and responses,
// indexes only their workers' KV events and chooses only among their
// workers. The zero value serves every model.
type Served struct {
	names []string
	set   map[string]bool
}

// ServedModels returns the Served of names; none: every model.
func ServedModels(names []string) Served {
	if len(names) == 0 {
		return Served{}
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return Served{names: slices.Clone(names), set: set}
}

// All reports whether every model is served.
func (m Served) All() bool { return m.set == nil }

// Serves reports whether model is served.
func (m Served) Serves(model string) bool { return m.set == nil || m.set[model] }

// Worker reports whether w (nil: unknown) serves a served model.
func (m Served) Worker(w *schemas.WorkerRecord) bool {
	return m.set == nil || (w != nil && m.set[w.Model])
}

// Subjects narrows a request or response stream's subjects to the
// served models' subjects (<prefix><model token>), when the stream's
// subjects are the default wildcard; with other subjects it cannot know
// where a model's events go, and keeps them (the selector still only
// chooses among served workers).
func (m Served) Subjects(subjects []string, prefix string) []string {
	if m.set == nil || !slices.Equal(subjects, []string{prefix + ">"}) {
		return subjects
	}
	out := make([]string, 0, len(m.names))
	for _, name := range m.names {
		// Both spellings of the model's subject (streams.ModelSubjects).
		for _, sub := range streams.ModelSubjects(prefix, name) {
			if !slices.Contains(out, sub) {
				out = append(out, sub)
			}
		}
	}
	return out
}

// KeepWorker decides whether KV events of worker id are indexed: a
// registered worker of another model is not; an unregistered one is (its
// events may precede its record). r nil: every worker.
func (m Served) KeepWorker(r *Registry, id uint64) bool {
	if m.set == nil || r == nil {
		return true
	}
	w, ok := r.Get(id)
	return !ok || m.set[w.Model]
}

// Workers is r's workers of the served models.
func (m Served) Workers(r *Registry) []schemas.WorkerRecord {
	all := r.Workers()
	if m.set == nil {
		return all
	}
	return slices.DeleteFunc(all, func(w schemas.WorkerRecord) bool { return !m.set[w.Model] })
}

// WorkersFor keeps r's per-model candidate lists (a choice's cost must
// not grow with other models' records), narrowed to the served models as
// Workers is.
func (m Served) WorkersFor(r *Registry, model string) []schemas.WorkerRecord {
	if m.set == nil {
		return r.WorkersFor(model)
	}
	if model == "" {
		return m.Workers(r)
	}
	if !m.set[model] {
		return nil
	}
	ws := r.WorkersFor(model)
	if !slices.ContainsFunc(ws, func(w schemas.WorkerRecord) bool { return !m.set[w.Model] }) {
		return ws // shared, unmodified
	}
	return slices.DeleteFunc(slices.Clone(ws), func(w schemas.WorkerRecord) bool { return !m.set[w.Model] })
}

// View is r as a selector of a member serving m sees it.
func (m Served) View(r *Registry) ServedView { return ServedView{m: m, r: r} }

// ServedView is a Registry narrowed to the served models (routing's
// worker source).
type ServedView struct {
	m Served
	r *Registry
}

// Workers is the served models' workers.
func (v ServedView) Workers() []schemas.WorkerRecord { return v.m.Workers(v.r) }

// WorkersFor is the served models' workers for model.
func (v ServedView) WorkersFor(model string) []schemas.WorkerRecord {
	return v.m.WorkersFor(v.r, model)
}
