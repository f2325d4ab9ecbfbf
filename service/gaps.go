package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
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
// (headerSnapCreated: the stream's creation time, which JetStream sets
// when the stream is created and never changes). Start-up takes the
// snapshot of the current incarnation that covers the most, from any
// object store of the account, and compares where it resumes with the
// stream's first sequence. A gap marks the index incomplete: the gauge
// hintstream_index_complete, one WARN line naming the missing range,
// /readyz's body and GET /v1/index (hintstream inspect index).

// headerSnapCreated is the creation time (RFC 3339, nanoseconds) of the
// stream incarnation a snapshot covers. Snapshots written before it
// existed lack it; see usableLegacy.
const headerSnapCreated = "Hintstream-Kv-Stream-Created"

// snapCandidate is a snapshot object that may seed the index.
type snapCandidate struct {
	obs    jetstream.ObjectStore
	bucket string
	name   string
	seq    uint64
	// created is the stream incarnation it covers; zero for a snapshot
	// written before snapshots named it.
	created time.Time
	own     bool // this member's own bucket and name
	headers nats.Header
}

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

// allModelsSnapshot is the name of the snapshot of a member serving every
// model: it holds every worker, so any member of the stream may start
// from it (workers of other models are dropped as the registry loads).
func (s *Service) allModelsSnapshot() string { return "kv-index/" + s.cfg.Streams.KVEvents.Name }

// snapshotCandidates lists the snapshots of this stream this member may
// load: its own, and in every object store of the account the one of the
// same name or the one of a member serving every model. The own bucket
// is read first; the others are best effort (a user may not list them).
func (s *Service) snapshotCandidates(ctx context.Context) []snapCandidate {
	// Each lookup and listing within its own op timeout, not the load's
	// long deadline (kept for reading the object): a request a cluster
	// drops while it elects a leader must not hold start-up for minutes
	// (seen in CI on a 3-node cluster).
	op := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, streams.DefaultOpTimeout)
	}
	buckets := []string{s.cfg.SnapshotBucket}
	lctx, cancel := op()
	defer cancel()
	names := s.js.ObjectStoreNames(lctx)
	for b := range names.Name() {
		if b != s.cfg.SnapshotBucket {
			buckets = append(buckets, b)
		}
	}
	if err := names.Error(); err != nil {
		s.log.Debug("object stores not listed; only this member's snapshot bucket is read", "err", err)
	}
	want := map[string]bool{s.snapshotName(): true, s.allModelsSnapshot(): true}
	var out []snapCandidate
	for i, b := range buckets {
		var obs jetstream.ObjectStore
		var err error
		if i == 0 {
			obs, err = s.snapshotStore(ctx) // retries its own timeouts
		} else {
			octx, cancel := op()
			obs, err = s.js.ObjectStore(octx, b)
			cancel()
		}
		if err != nil {
			if i == 0 {
				s.log.Warn("snapshot store unavailable", "bucket", b, "err", err)
			}
			continue
		}
		octx, cancel := op()
		infos, err := obs.List(octx)
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
			s.log.Debug("snapshot store not listed", "bucket", b, "err", err)
			continue
		}
		for _, info := range infos {
			if info == nil || !want[info.Name] || info.Headers.Get(headerSnapStream) != s.cfg.Streams.KVEvents.Name {
				continue
			}
			seq, err := strconv.ParseUint(info.Headers.Get(headerSnapSeq), 10, 64)
			if err != nil {
				continue
			}
			c := snapCandidate{obs: obs, bucket: b, name: info.Name, seq: seq,
				own: i == 0 && info.Name == s.snapshotName(), headers: info.Headers}
			if v := info.Headers.Get(headerSnapCreated); v != "" {
				if c.created, err = time.Parse(time.RFC3339Nano, v); err != nil {
					continue // unreadable incarnation: cannot be trusted
				}
			}
			out = append(out, c)
		}
	}
	// The most covered first; on a tie, this member's own, then the exact name.
	slices.SortStableFunc(out, func(a, b snapCandidate) int {
		if c := cmp.Compare(b.seq, a.seq); c != 0 {
			return c
		}
		if a.own != b.own {
			if a.own {
				return -1
			}
			return 1
		}
		return cmp.Compare(strings.Count(b.name, "/"), strings.Count(a.name, "/"))
	})
	return out
}

// sameIncarnation reports whether a snapshot covers the stream as it is
// now. A snapshot without the header is taken only when its sequence
// exists in the stream: one past the stream's last sequence is certainly
// of an older incarnation, one within it may be.
func sameIncarnation(c snapCandidate, info *jetstream.StreamInfo) bool {
	if c.created.IsZero() {
		return c.seq <= info.State.LastSeq
	}
	return c.created.Equal(info.Created)
}

// restoreSnapshot fills the index from the best usable snapshot and
// returns the sequence to resume at (0: none loaded).
func (s *Service) restoreSnapshot(ctx context.Context, info *jetstream.StreamInfo) uint64 {
	start := time.Now()
	cands := s.snapshotCandidates(ctx)
	if len(cands) == 0 {
		s.log.Info("no index snapshot yet; replaying KV events from the stream's start")
		return 0
	}
	for _, c := range cands {
		if !sameIncarnation(c, info) {
			s.log.Warn("snapshot belongs to an older stream of the same name; ignored", "bucket", c.bucket,
				"object", c.name, "covers_seq", c.seq, "snapshot_stream_created", c.created, "stream_created", info.Created)
			continue
		}
		r, err := c.obs.Get(ctx, c.name)
		if err == nil {
			err = s.Index.ReadSnapshot(r)
			r.Close()
		}
		if err != nil {
			s.log.Warn("snapshot unusable; trying the next", "bucket", c.bucket, "object", c.name, "err", err)
			s.Index = s.cfg.NewIndex(s.log)
			continue
		}
		st := s.Index.Stats()
		s.log.Info("index snapshot loaded", "bucket", c.bucket, "object", c.name, "covers_seq", c.seq,
			"device_blocks", st.DeviceBlocks, "workers", st.Workers, "took", time.Since(start).Round(time.Millisecond))
		s.Counters.SnapshotsLoaded.Inc()
		s.snapHeader = c.headers
		return c.seq + 1
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
