package service

import (
	"context"
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
	stream, err := s.kvStreamInfo(ctx)
	if err != nil {
		return 0, false
	}
	return s.snaps.Cover(ctx, stream.Created)
}
