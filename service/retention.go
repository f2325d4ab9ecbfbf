package service

import (
	"context"
	"strconv"
	"time"
)

// snapshotsCover is the highest KV-event sequence that every snapshot of
// this member's KV-event stream covers: members serving other models
// (--models) keep their own snapshots of the same stream, and a purge must
// not take events one of them still needs. Only snapshots of the stream
// as it is now count: one of an older stream of the same name (deleted
// and created again) says nothing of the new one's sequences, and one
// written before snapshots named their stream's incarnation holds every
// purge back until it is replaced (gaps.go). ok is false when there is
// no such snapshot or the store cannot be listed.
func (s *Service) snapshotsCover(ctx context.Context) (covered uint64, ok bool) {
	obs, err := s.snapshotStore(ctx)
	if err != nil {
		return 0, false
	}
	stream, err := s.kvStreamInfo(ctx)
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
		created, err := time.Parse(time.RFC3339Nano, info.Headers.Get(headerSnapCreated))
		if err != nil {
			s.log.Debug("snapshot without its stream's incarnation; KV events not purged until it is replaced",
				"object", info.Name)
			return 0, false
		}
		if !created.Equal(stream.Created) {
			continue // of an older stream of this name
		}
		if !ok || seq < covered {
			covered, ok = seq, true
		}
	}
	return covered, ok
}
