package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Several KV-event streams per member (Config.KVStreams, --kv-streams):
// a cluster that partitions its KV events (one stream per rack, per model
// family, per publisher group) is read whole by one member. Each extra
// stream is attached as it is (never created, never purged: whoever made
// the partition owns its limits) and read by its own ordered consumer,
// each worker's events in their order as long as a worker publishes to
// one stream, which a partition by subject guarantees. Snapshots record
// each extra stream's sequence and incarnation beside the main one's
// (snapshots.HeaderExtra); a snapshot without them (older, or taken with other
// streams) is still loaded, and the extra streams are then replayed from
// their start (events are idempotent). The gap check of gaps.go runs on
// every stream.

// snapshots.HeaderExtra lists the extra streams a snapshot covers:
// "NAME=SEQ@CREATED_UNIX_NS,..." in Config.KVStreams' order.

// validateKVStreams checks Config.KVStreams.
func (c Config) validateKVStreams() error {
	seen := map[string]bool{c.Streams.KVEvents.Name: true}
	for _, name := range c.KVStreams {
		switch {
		case name == "" || strings.ContainsAny(name, " .*>=,@\t"):
			return fmt.Errorf("%w: --kv-streams: %q is not a stream name", ErrInvalidConfig, name)
		case seen[name]:
			return fmt.Errorf("%w: --kv-streams: %q named twice (or it is --kv-events-stream)", ErrInvalidConfig, name)
		}
		seen[name] = true
	}
	return nil
}

// extraCover is what a snapshot says of one extra stream.
type extraCover struct {
	seq     uint64
	created time.Time
}

// parseExtraStreams reads snapshots.HeaderExtra; a malformed entry is left out
// (that stream is replayed).
func parseExtraStreams(h nats.Header) map[string]extraCover {
	out := map[string]extraCover{}
	for _, ent := range strings.Split(h.Get(snapshots.HeaderExtra), ",") {
		name, rest, ok := strings.Cut(ent, "=")
		if !ok || name == "" {
			continue
		}
		seqS, createdS, ok := strings.Cut(rest, "@")
		if !ok {
			continue
		}
		seq, err1 := strconv.ParseUint(seqS, 10, 64)
		ns, err2 := strconv.ParseInt(createdS, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[name] = extraCover{seq: seq, created: time.Unix(0, ns).UTC()}
	}
	return out
}

// extraHeader is snapshots.HeaderExtra for the extra consumers as they are now
// (each read as a pair: incarnation, then applied sequence). ok is false
// when a stream was recreated meanwhile.
func (s *Service) extraHeader() (string, bool) {
	parts := make([]string, 0, len(s.kvExtra))
	for i, c := range s.kvExtra {
		created := c.StreamCreated()
		seq := c.Applied()
		if !c.StreamCreated().Equal(created) {
			return "", false
		}
		parts = append(parts, fmt.Sprintf("%s=%d@%d", s.cfg.KVStreams[i], seq, created.UnixNano()))
	}
	return strings.Join(parts, ","), true
}

// extraStarts decides where each extra stream resumes, from the loaded
// snapshot's header (nil: none loaded), and checks each for a gap.
func (s *Service) extraStarts(ctx context.Context, snap nats.Header) (map[string]uint64, error) {
	covered := map[string]extraCover{}
	if snap != nil {
		covered = parseExtraStreams(snap)
	}
	out := map[string]uint64{}
	for _, name := range s.cfg.KVStreams {
		st, err := s.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("--kv-streams: stream %q not found (extra KV-event streams are attached, never created)", name)
		}
		if err != nil {
			return nil, fmt.Errorf("--kv-streams: stream %q: %w", name, err)
		}
		info := st.CachedInfo()
		var resume uint64
		if c, ok := covered[name]; ok && c.created.Equal(info.Created) {
			resume = c.seq + 1
		} else if ok {
			s.log.Warn("snapshot covers an older stream of the same name; replaying it from its start", "stream", name)
		}
		out[name] = resume
		s.checkResume(info, resume)
	}
	return out, nil
}

// startExtraKV starts a consumer per extra KV-event stream, applying to
// the same engine as the main one.
func (s *Service) startExtraKV(ctx context.Context, apply consumers.ApplyFunc, dlq *consumers.DeadLetter) error {
	if len(s.cfg.KVStreams) == 0 {
		return nil
	}
	starts, err := s.extraStarts(ctx, s.snapHeader)
	if err != nil {
		return err
	}
	for _, name := range s.cfg.KVStreams {
		c := consumers.NewStateConsumer(s.js, consumers.StateConfig{Kind: "kv_events", Stream: name,
			Shards: s.cfg.KVApplyShards, StartSeq: starts[name]}, apply, dlq, s.Counters, s.log)
		if err := c.Start(ctx); err != nil {
			c.Stop()
			return err
		}
		s.kvExtra = append(s.kvExtra, c)
		s.lc.run(stageState, "KV-event consumer of "+name, c.Run)
	}
	s.log.Info("reading extra KV-event streams", "streams", s.cfg.KVStreams)
	return nil
}

// waitExtraCaughtUp waits for every extra KV-event stream.
func (s *Service) waitExtraCaughtUp(ctx context.Context) error {
	for _, c := range s.kvExtra {
		if err := c.WaitCaughtUp(ctx); err != nil {
			return err
		}
	}
	return nil
}
