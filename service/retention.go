package service

import (
	"context"
	"time"
)

// snapshotsCover is the creation time of the KV-event stream as it is
// now and the highest sequence of it that every snapshot of
// this member's KV-event stream covers: members serving other models
// (--models) keep their own snapshots of the same stream, and a purge must
// not take events one of them still needs. Only snapshots of the stream
// as it is now count: one of an older stream of the same name (deleted
// and created again) says nothing of the new one's sequences, and one
// written before snapshots named their stream's incarnation holds every
// purge back until it is replaced (gaps.go). ok is false when there is
// no such snapshot or the store cannot be listed.
func (s *Service) snapshotsCover(ctx context.Context) (created time.Time, covered uint64, ok bool) {
	stream, err := s.kvStreamInfo(ctx)
	if err != nil {
		return time.Time{}, 0, false
	}
	covered, ok = s.snaps.Cover(ctx, stream.Created)
	return stream.Created, covered, ok
}
