package service

import (
	"context"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// Gaps are loud. The index is built from KV events; a member that cannot
// read every event since the stream began (or since the snapshot it
// loaded) holds an index without some blocks, routes prompts away from
// the workers that hold them, and would otherwise say nothing. Two ways
// lead there:
//
//   - the events were removed before the member read them: purged behind
//     another member's snapshot, aged out by the stream's own limits, or
//     the snapshot that covered them is gone (--snapshot-interval off, a
//     bucket of its own, a new --models split, a deleted object store);
//   - the snapshot belongs to an older stream of the same name (deleted
//     and created again), whose sequences mean nothing in the new one.
//
// A snapshot therefore names the incarnation of the stream it covers
// (snapshots.HeaderCreated: the stream's creation time, which JetStream sets
// when the stream is created and never changes). Start-up takes the
// snapshot of the current incarnation that covers the most, from any
// object store of the account, and compares where it resumes with the
// stream's first sequence. A gap marks the index incomplete: the gauge
// hintstream_index_complete, one WARN line naming the missing range,
// /readyz's body and GET /v1/index (hintstream inspect index).

// kvStreamInfo is the KV-event stream's current info.
func (s *Service) kvStreamInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	st, err := s.js.Stream(ctx, s.cfg.Streams.KVEvents.Name)
	if err != nil {
		return nil, err
	}
	return st.CachedInfo(), nil
}

// restoreSnapshot fills the index from the best usable snapshot and
// returns the sequence to resume at (0: none loaded).
func (s *Service) restoreSnapshot(ctx context.Context, info *jetstream.StreamInfo) uint64 {
	start := time.Now()
	cands := s.snaps.Candidates(ctx)
	if len(cands) == 0 {
		s.log.Info("no index snapshot yet; replaying KV events from the stream's start")
		return 0
	}
	for _, c := range cands {
		if !c.SameIncarnation(info) {
			s.log.Warn("snapshot belongs to an older stream of the same name; ignored", "bucket", c.Bucket,
				"object", c.Name, "covers_seq", c.Seq, "snapshot_stream_created", c.Created, "stream_created", info.Created)
			continue
		}
		r, err := c.Store.Get(ctx, c.Name)
		if err == nil {
			err = s.Index.ReadSnapshot(r)
			r.Close()
		}
		if err != nil {
			s.log.Warn("snapshot unusable; trying the next", "bucket", c.Bucket, "object", c.Name, "err", err)
			s.Index = s.cfg.NewIndex(s.log)
			continue
		}
		st := s.Index.Stats()
		s.log.Info("index snapshot loaded", "bucket", c.Bucket, "object", c.Name, "covers_seq", c.Seq,
			"device_blocks", st.DeviceBlocks, "workers", st.Workers, "took", time.Since(start).Round(time.Millisecond))
		s.Counters.SnapshotsLoaded.Inc()
		s.snapHeader = c.Headers
		return c.Seq + 1
	}
	s.log.Info("no usable index snapshot; replaying KV events from the stream's start")
	return 0
}

// checkResume compares where the KV consumer resumes with what the
// stream still holds: the events in between are lost to this member.
func (s *Service) checkResume(info *jetstream.StreamInfo, resume uint64) {
	from := max(resume, 1)
	first, last := info.State.FirstSeq, info.State.LastSeq
	if last < from || first <= from {
		return
	}
	to := first - 1
	reason := fmt.Sprintf("KV events %d..%d of stream %s were removed before this member read them (%d events): "+
		"blocks they stored are missing from the index until their workers clear or re-store them",
		from, to, info.Config.Name, to-from+1)
	if prev := s.indexGap.Load(); prev != nil { // another stream's gap
		reason = *prev + "; " + reason
	}
	s.indexGap.Store(&reason)
	s.log.Warn("index incomplete: KV events were removed before this member read them", "stream", info.Config.Name,
		"from_seq", from, "to_seq", to, "missing", to-from+1, "resume_seq", from, "first_seq", first)
}

// IndexComplete reports whether the index was built from every KV event
// since the stream began, and if not, why.
func (s *Service) IndexComplete() (complete bool, reason string) {
	if r := s.indexGap.Load(); r != nil {
		return false, *r
	}
	return true, ""
}

// loadSnapshot fills the index from the best usable snapshot (unless
// snapshots are off), checks the resume point against the stream, and
// returns the sequence to resume KV events at (0: from the start). A
// missing or unusable snapshot is not an error: the stream is replayed.
func (s *Service) loadSnapshot(ctx context.Context) uint64 {
	// Without a deadline of ours, nats.go bounds the whole object read by
	// its 5 s default: a 10M-entry snapshot (160 MB) on a busy machine
	// timed out and start-up fell back to a full replay.
	ctx, cancel := context.WithTimeout(ctx, DefaultSnapshotLoadTimeout)
	defer cancel()
	info, err := s.kvStreamInfo(ctx)
	if err != nil {
		// The KV consumer's start fails on the same lookup and says why.
		s.log.Warn("KV-event stream not found before loading a snapshot", "err", err)
		return 0
	}
	var resume uint64
	if s.cfg.SnapshotInterval >= 0 {
		resume = s.restoreSnapshot(ctx, info)
	}
	s.checkResume(info, resume)
	return resume
}
