package service

import (
	"context"
	"errors"
	"time"

	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/hintstream/hintstream/streams"
)

// saveSnapshot writes the index with the sequence it covers: every event
// up to it is applied (later ones may be too; applying them again on
// start-up is harmless, events are idempotent).
func (s *Service) saveSnapshot(ctx context.Context) error {
	created := s.kv.StreamCreated()
	covered := s.kv.Applied()
	if !s.kv.StreamCreated().Equal(created) {
		return nil // the stream was recreated meanwhile: the next round saves the new one
	}
	extra, ok := s.extraHeader()
	if !ok {
		return nil // likewise for an extra stream
	}
	if covered == 0 || (created.UnixNano() == s.lastSnapCreated.Load() && covered <= s.lastSnapshot.Load()) {
		return nil
	}
	start := time.Now()
	if err := s.snaps.Save(ctx, snapshots.Meta{Covered: covered, Created: created, Extra: extra}, s.Index.WriteSnapshot); err != nil {
		s.Counters.SnapshotsErrors.Inc()
		return err
	}
	s.lastSnapshot.Store(covered)
	s.lastSnapCreated.Store(created.UnixNano())
	s.Counters.SnapshotsSaved.Inc()
	s.log.Info("index snapshot saved", "covers_seq", covered, "took", time.Since(start).Round(time.Millisecond))
	s.reclaimAfterSave(ctx) // what interrupted saves left (snapshot_reclaim.go)
	return nil
}

// runSnapshots is the snapshotter: it saves a snapshot every interval
// until ctx ends, then one more within the drain, which makes the next
// start-up replay little. It runs after the KV consumer stopped (stage
// order, run.go), so the last one covers every event applied.
func (s *Service) runSnapshots(ctx context.Context) error {
	t := time.NewTicker(s.cfg.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if s.ready.Load() {
				if err := s.saveSnapshot(s.lc.drainContext()); err != nil {
					s.log.Warn("shutdown snapshot not saved", "err", err)
				}
			}
			return nil
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, DefaultSnapshotSaveTimeout)
		if err := s.saveSnapshot(sctx); err != nil {
			s.log.Warn("snapshot not saved", "err", err)
		} else {
			s.purgeKVEvents(sctx)
		}
		cancel()
	}
}

// purgeKVEvents drops the KV events that every snapshot of the stream
// covers and that are older than KVEventsKeep, so start-up is a snapshot
// plus a short tail and the stream stops growing. Only a stream hintstream
// created is purged; a foreign one (Dynamo's) is said once and left alone.
func (s *Service) purgeKVEvents(ctx context.Context) {
	if s.cfg.KVEventsKeep < 0 || s.purgeOff.Load() {
		return
	}
	created, covered, ok := s.snapshotsCover(ctx)
	if !ok {
		return
	}
	name := s.cfg.Streams.KVEvents.Name
	p, err := streams.PurgeCovered(ctx, s.js, name, created, covered, s.cfg.KVEventsKeep, time.Now())
	switch {
	case errors.Is(err, streams.ErrStreamChanged):
		s.log.Info("KV-event stream recreated since the snapshot was looked up; purge left to the next round", "stream", name)
	case errors.Is(err, streams.ErrForeignStream):
		s.purgeOff.Store(true)
		s.log.Info("KV-event stream was not created by hintstream: never purged, its own limits bound it", "stream", name)
	case err != nil:
		s.log.Warn("KV events not purged", "stream", name, "err", err)
	case p.Messages > 0:
		s.Counters.KVEventsPurged.Add(p.Messages)
		s.log.Info("KV events behind the snapshots purged", "stream", name, "messages", p.Messages,
			"bytes", p.Bytes, "kept_from_seq", p.KeptFrom)
	}
}
