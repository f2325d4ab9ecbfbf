package service

import (
	"context"
	"time"
)

// Snapshot storage reclaimed (streams.ReclaimChunks) after each saved
// snapshot and at start-up; orphans too young at start-up are looked at
// again once their grace has passed.

// DefaultSnapshotReclaimGrace is how long an unnamed chunk subject must
// have been idle before it is purged.
const DefaultSnapshotReclaimGrace = 30 * time.Second

// reclaimGrace is the configured grace, or the default.
func (s *Service) reclaimGrace() time.Duration {
	if s.cfg.SnapshotReclaimGrace > 0 {
		return s.cfg.SnapshotReclaimGrace
	}
	return DefaultSnapshotReclaimGrace
}

// startReclaim hands the reclaimer to the service's group (run.go).
func (s *Service) startReclaim() {
	if s.cfg.SnapshotInterval < 0 || s.js == nil {
		return
	}
	s.lc.run(stageReclaim, "snapshot reclaim", s.runReclaim)
}

// runReclaim purges abandoned chunks, retrying until none is left too
// young to judge, or ctx ends. A failure is logged, not fatal: the next
// saved snapshot reclaims again.
func (s *Service) runReclaim(ctx context.Context) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, DefaultReclaimTimeout)
		next, err := s.reclaimChunks(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("snapshot chunks not reclaimed", "err", err)
			}
			return nil
		}
		if next <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// reclaimAfterSave purges what earlier, interrupted saves left, once a
// save has succeeded.
func (s *Service) reclaimAfterSave(ctx context.Context) {
	if _, err := s.reclaimChunks(ctx); err != nil {
		s.log.Warn("snapshot chunks not reclaimed", "err", err)
	}
}

// reclaimChunks purges the chunk subjects of the snapshot bucket that no
// object names and that have been idle for the grace period
// (streams.ReclaimChunks). It returns how long until the youngest orphan
// left alone may be judged (0: none).
func (s *Service) reclaimChunks(ctx context.Context) (time.Duration, error) {
	r, err := s.snaps.Reclaim(ctx, s.reclaimGrace())
	if err != nil {
		return 0, err
	}
	if r.Saves > 0 {
		s.Counters.SnapshotsReclaimed.Add(uint64(r.Saves))
		s.Counters.SnapshotsReclaimedChunks.Add(r.Chunks)
		s.log.Info("reclaimed the chunks of interrupted snapshot saves", "saves", r.Saves, "chunks", r.Chunks)
	}
	return r.Next, nil
}
