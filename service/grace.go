package service

import (
	"sync"
	"time"
)

// DefaultWorkerGrace is how long a worker whose record was deleted or
// expired keeps its indexed blocks. Its engine cache outlives a sidecar
// restart or an API hiccup; its index should too. Meanwhile it is not
// chosen (it is not in the registry) and its KV events still apply.
const DefaultWorkerGrace = 2 * time.Minute

// workerGrace delays dropping a departed worker's blocks, and cancels
// the drop when the worker registers again.
type workerGrace struct {
	mu     sync.Mutex
	timers map[uint64]*time.Timer
}

// leave schedules drop for id after d (at once when d <= 0).
func (g *workerGrace) leave(id uint64, d time.Duration, drop func()) {
	if d <= 0 {
		drop()
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timers == nil {
		g.timers = map[uint64]*time.Timer{}
	}
	if old := g.timers[id]; old != nil {
		old.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		g.mu.Lock()
		mine := g.timers[id] == t
		if mine {
			delete(g.timers, id)
		}
		g.mu.Unlock()
		if mine {
			drop()
		}
	})
	g.timers[id] = t
}

// back cancels id's pending drop and reports whether one was pending.
func (g *workerGrace) back(id uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.timers[id]
	if t == nil {
		return false
	}
	t.Stop()
	delete(g.timers, id)
	return true
}

// stop cancels every pending drop (shutdown: the index is saved as is).
func (g *workerGrace) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, t := range g.timers {
		t.Stop()
		delete(g.timers, id)
	}
}

// workerLeft drops id's blocks after Config.WorkerGrace unless it
// registers again.
func (s *Service) workerLeft(id uint64) {
	s.grace.leave(id, s.cfg.WorkerGrace, func() {
		if s.registry != nil {
			if _, back := s.registry.Get(id); back {
				return
			}
		}
		s.holding.Unregister(id) // removes its blocks
		if s.cfg.WorkerGrace > 0 {
			s.log.Info("departed worker's blocks dropped after the grace period", "worker_id", id, "grace", s.cfg.WorkerGrace)
		}
	})
}
