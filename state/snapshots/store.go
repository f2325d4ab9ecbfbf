// Package snapshots keeps the KV index's snapshots in a JetStream object
// store: their names, the headers that say which stream incarnation and
// sequence each covers, saving one, finding the ones a member may start
// from, and the sequence every snapshot of a stream covers (what may be
// purged behind them). The index writes and reads the bytes
// (kvevents/index); the service decides when.
package snapshots

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSnapshotBucket is the object store bucket of index snapshots.
const DefaultSnapshotBucket = "hintstream_snapshots"

// Object headers of a snapshot.
const (
	// HeaderStream names the KV-event stream it covers.
	HeaderStream = "Hintstream-Kv-Stream"
	// HeaderSeq is the sequence up to which every event was applied.
	HeaderSeq = "Hintstream-Kv-Seq"
	// HeaderCreated is the creation time (RFC 3339, nanoseconds) of the
	// stream incarnation it covers. Snapshots written before it existed
	// lack it (see Candidate.SameIncarnation).
	HeaderCreated = "Hintstream-Kv-Stream-Created"
	// HeaderExtra lists the extra KV-event streams it covers, as the
	// service writes and reads them.
	HeaderExtra = "Hintstream-Kv-Extra-Streams"
)

// Store is one member's view of the snapshots of one KV-event stream.
type Store struct {
	js     jetstream.JetStream
	bucket string
	stream string
	suffix string // per model split (--models), "" for a member serving every model
	log    *slog.Logger
}

// New returns the Store of stream's snapshots in bucket (DefaultSnapshotBucket
// when ""); suffix tells apart members serving different models. Nothing
// is contacted until a method is called.
func New(js jetstream.JetStream, bucket, stream, suffix string, log *slog.Logger) *Store {
	if bucket == "" {
		bucket = DefaultSnapshotBucket
	}
	if log == nil {
		log = slog.Default()
	}
	return &Store{js: js, bucket: bucket, stream: stream, suffix: suffix, log: log}
}

// Name is this member's snapshot object: per KV-event stream, so any
// member reading that stream can start from any member's snapshot.
func (s *Store) Name() string { return "kv-index/" + s.stream + s.suffix }

// AllModelsName is the snapshot of a member serving every model: it holds
// every worker, so any member of the stream may start from it (workers of
// other models are dropped as the registry loads).
func (s *Store) AllModelsName() string { return "kv-index/" + s.stream }

// Open attaches to the bucket, creating it when absent.
func (s *Store) Open(ctx context.Context) (jetstream.ObjectStore, error) {
	return streams.OpenObjectStore(ctx, s.js, jetstream.ObjectStoreConfig{Bucket: s.bucket,
		Description: "hintstream: KV index snapshots, by KV-event stream"}, streams.WithLogger(s.log))
}

// Meta is what a snapshot covers.
type Meta struct {
	Covered uint64    // every event up to this sequence is applied
	Created time.Time // the stream incarnation
	Extra   string    // HeaderExtra's value, "" for none
}

// Save writes this member's snapshot: write fills it (on its own
// goroutine, while the store reads).
func (s *Store) Save(ctx context.Context, m Meta, write func(io.Writer) error) error {
	obs, err := s.Open(ctx)
	if err != nil {
		return err
	}
	headers := nats.Header{
		HeaderStream:  []string{s.stream},
		HeaderSeq:     []string{strconv.FormatUint(m.Covered, 10)},
		HeaderCreated: []string{m.Created.Format(time.RFC3339Nano)},
	}
	if m.Extra != "" {
		headers.Set(HeaderExtra, m.Extra)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: s.Name(), Headers: headers}, pr)
	pr.CloseWithError(err) // unblock the writer if Put gave up
	if err != nil {
		return fmt.Errorf("index snapshot: %w", err)
	}
	return nil
}

// Reclaim purges the chunks interrupted saves left in the bucket
// (streams.ReclaimChunks).
func (s *Store) Reclaim(ctx context.Context, grace time.Duration) (streams.Reclaimed, error) {
	obs, err := s.Open(ctx)
	if err != nil {
		return streams.Reclaimed{}, err
	}
	return streams.ReclaimChunks(ctx, s.js, obs, s.bucket, grace)
}

// Candidate is a snapshot object that may seed the index.
type Candidate struct {
	Store  jetstream.ObjectStore
	Bucket string
	Name   string
	Seq    uint64
	// Created is the stream incarnation it covers; zero for a snapshot
	// written before snapshots named it.
	Created time.Time
	Own     bool // this member's own bucket and name
	Headers nats.Header
}

// SameIncarnation reports whether c covers the stream as it is now. A
// snapshot without HeaderCreated is taken only when its sequence exists
// in the stream: one past the stream's last sequence is certainly of an
// older incarnation, one within it may be.
func (c Candidate) SameIncarnation(info *jetstream.StreamInfo) bool {
	if c.Created.IsZero() {
		return c.Seq <= info.State.LastSeq
	}
	return c.Created.Equal(info.Created)
}

// Candidates lists the snapshots of the stream this member may load, the
// most covered first (on a tie, its own, then the exact name): its own,
// and in every object store of the account the one of the same name or
// the one of a member serving every model. The own bucket is read first;
// the others are best effort (a user may not list them). Each lookup and
// listing runs within streams.DefaultOpTimeout, not ctx's longer deadline
// (kept for reading the object): a request a cluster drops while it
// elects a leader must not hold start-up for minutes.
func (s *Store) Candidates(ctx context.Context) []Candidate {
	op := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, streams.DefaultOpTimeout)
	}
	buckets := []string{s.bucket}
	lctx, cancel := op()
	defer cancel()
	names := s.js.ObjectStoreNames(lctx)
	for b := range names.Name() {
		if b != s.bucket {
			buckets = append(buckets, b)
		}
	}
	if err := names.Error(); err != nil {
		s.log.Debug("object stores not listed; only this member's snapshot bucket is read", "err", err)
	}
	want := map[string]bool{s.Name(): true, s.AllModelsName(): true}
	var out []Candidate
	for i, b := range buckets {
		var obs jetstream.ObjectStore
		var err error
		if i == 0 {
			obs, err = s.Open(ctx) // retries its own timeouts
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
			if info == nil || !want[info.Name] || info.Headers.Get(HeaderStream) != s.stream {
				continue
			}
			seq, err := strconv.ParseUint(info.Headers.Get(HeaderSeq), 10, 64)
			if err != nil {
				continue
			}
			c := Candidate{Store: obs, Bucket: b, Name: info.Name, Seq: seq,
				Own: i == 0 && info.Name == s.Name(), Headers: info.Headers}
			if v := info.Headers.Get(HeaderCreated); v != "" {
				if c.Created, err = time.Parse(time.RFC3339Nano, v); err != nil {
					continue // unreadable incarnation: cannot be trusted
				}
			}
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		if c := cmp.Compare(b.Seq, a.Seq); c != 0 {
			return c
		}
		if a.Own != b.Own {
			if a.Own {
				return -1
			}
			return 1
		}
		return cmp.Compare(strings.Count(b.Name, "/"), strings.Count(a.Name, "/"))
	})
	return out
}

// Cover is the highest KV-event sequence that every snapshot of the
// stream in this member's bucket covers, for the incarnation created at
// created: members serving other models (--models) keep their own
// snapshots of the same stream, and a purge must not take events one of
// them still needs. A snapshot of an older incarnation says nothing of
// the new one's sequences and is skipped; one without HeaderCreated holds
// every purge back until it is replaced. ok is false when there is no
// such snapshot or the store cannot be listed.
func (s *Store) Cover(ctx context.Context, created time.Time) (covered uint64, ok bool) {
	obs, err := s.Open(ctx)
	if err != nil {
		return 0, false
	}
	infos, err := obs.List(ctx)
	if err != nil {
		s.log.Warn("snapshot store not listed; KV events not purged", "err", err)
		return 0, false
	}
	for _, info := range infos {
		if info.Headers.Get(HeaderStream) != s.stream {
			continue
		}
		seq, err := strconv.ParseUint(info.Headers.Get(HeaderSeq), 10, 64)
		if err != nil {
			continue // Candidates ignores such an object too
		}
		at, err := time.Parse(time.RFC3339Nano, info.Headers.Get(HeaderCreated))
		if err != nil {
			s.log.Debug("snapshot without its stream's incarnation; KV events not purged until it is replaced",
				"object", info.Name)
			return 0, false
		}
		if !at.Equal(created) {
			continue // of an older stream of this name
		}
		if !ok || seq < covered {
			covered, ok = seq, true
		}
	}
	return covered, ok
}
