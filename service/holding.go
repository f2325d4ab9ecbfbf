package service

import (
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// startHolding puts the holding area in front of the index (after the
// snapshot is loaded, since a failed load replaces the index; before the
// registry opens, since its initial records register workers).
// Its bounds were validated with the other decisions at Start.
func (s *Service) startHolding() {
	s.holding = index.NewHolding(s.Index, s.cfg.Holding, s.Counters)
}

// promote lets a newly registered worker's events into the index (on
// the dp ranks its record lists), applying those it published before
// registering; for an updated record it follows the record's ranks.
func (s *Service) promote(id uint64, rec *schemas.WorkerRecord) {
	ranks := 0
	if rec != nil {
		ranks = len(rec.HintEndpoints)
	}
	if n := s.holding.Register(id, ranks); n > 0 {
		s.log.Info("worker registered after its first KV events; held events applied", "worker_id", id, "events", n)
	}
}

// pruneUnregistered drops from the index the workers a loaded snapshot
// holds but the registry no longer lists, so a flood saved before this
// version, or a worker that left while no instance ran, is not kept.
func (s *Service) pruneUnregistered() {
	if gone := s.holding.Prune(); len(gone) > 0 {
		s.Counters.KVEventsPrunedWorkers.Add(uint64(len(gone)))
		s.log.Info("unregistered workers removed from the loaded index", "workers", len(gone))
	}
}
