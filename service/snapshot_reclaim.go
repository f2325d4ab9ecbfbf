package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Snapshot storage reclaimed: an object store Put writes its chunks on
// $O.<bucket>.C.<nuid> and only then the object's meta; a process killed
// in between leaves chunks no object names, which nothing ever removes
// (17 MB per kill for a 61 MiB index). So after each saved snapshot, and
// at start-up, the chunk subjects that no object names and that have
// had no new chunk for the grace period are purged. The grace keeps a
// save under way in another instance (sharing the bucket) safe: a live
// Put writes chunks back to back. Orphans too young at start-up are
// looked at again once their grace has passed.

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
// object names and that have been idle for the grace period. It returns
// how long until the youngest orphan left alone may be judged (0: none).
func (s *Service) reclaimChunks(ctx context.Context) (time.Duration, error) {
	obs, err := s.snapshotStore(ctx)
	if err != nil {
		return 0, err
	}
	bucket := s.cfg.SnapshotBucket
	st, err := s.js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		return 0, err
	}
	prefix := "$O." + bucket + ".C."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return 0, err
	}
	if len(info.State.Subjects) == 0 {
		return 0, nil
	}
	named := map[string]bool{}
	objs, err := obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, err
	}
	for _, o := range objs {
		named[o.NUID] = true
	}
	grace := s.reclaimGrace()
	var next time.Duration
	purged, msgs := 0, uint64(0)
	for subj, n := range info.State.Subjects {
		if named[strings.TrimPrefix(subj, prefix)] {
			continue
		}
		last, err := st.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // purged meanwhile (the save that owned it replaced it)
		}
		if err != nil {
			return 0, err
		}
		if idle := time.Since(last.Time); idle < grace {
			if wait := grace - idle; next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return 0, fmt.Errorf("purge %s: %w", subj, err)
		}
		purged++
		msgs += n
	}
	if purged > 0 {
		s.Counters.SnapshotsReclaimed.Add(uint64(purged))
		s.Counters.SnapshotsReclaimedChunks.Add(msgs)
		s.log.Info("reclaimed the chunks of interrupted snapshot saves", "saves", purged, "chunks", msgs)
	}
	if next > 0 {
		next += time.Second // past the edge, not on it
	}
	return next, nil
}
