package service

import (
	"context"
	"strconv"
)

// snapshotsCover is the highest KV-event sequence that every snapshot of
// this member's KV-event stream covers: members serving other models
// (--models) keep their own snapshots of the same stream, and a purge must
// not take events one of them still needs. ok is false when there is no
// snapshot or the store cannot be listed.
func (s *Service) snapshotsCover(ctx context.Context) (covered uint64, ok bool) {
	obs, err := s.snapshotStore(ctx)
	if err != nil {
		return 0, false
	}
	infos, err := obs.List(ctx)
	if err != nil {
		s.log.Warn("snapshot store not listed; KV events not purged", "err", err)
		return 0, false
	}
	for _, info := range infos {
		if info.Headers.Get(headerSnapStream) != s.cfg.Streams.KVEvents.Name {
			continue
		}
		seq, err := strconv.ParseUint(info.Headers.Get(headerSnapSeq), 10, 64)
		if err != nil {
			continue // loadSnapshot ignores such an object too
		}
		if !ok || seq < covered {
			covered, ok = seq, true
		}
	}
	return covered, ok
}
