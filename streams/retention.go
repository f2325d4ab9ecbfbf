package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrForeignStream: the stream was not created by hintstream (it lacks
// MetadataCreatedBy), so hintstream will not purge it.
var ErrForeignStream = errors.New("streams: stream not created by hintstream; never purged")

// ErrStreamChanged: the stream's creation time is not the one the caller's
// snapshot belongs to. The stream was deleted and created again between
// the caller's look and the purge, and a sequence covered in the old one
// says nothing of the new one, so nothing is purged.
var ErrStreamChanged = errors.New("streams: stream recreated since its snapshot; not purged")

// Purged says what PurgeCovered did.
type Purged struct {
	// KeptFrom is the first sequence left in the stream (0: nothing purged).
	KeptFrom uint64
	// Messages and Bytes removed.
	Messages, Bytes uint64
}

// PurgeCovered removes from stream name the messages that both a snapshot
// covers (sequence <= covered) and are older than keep at now, so that the
// stream holds roughly the last keep of history plus whatever no snapshot
// covers yet. created is the creation time of the stream the snapshot
// covers: a stream created at any other time is refused with
// ErrStreamChanged. It refuses, with ErrForeignStream, a stream hintstream
// did not create. Purging nothing is not an error.
//
// JetStream has no conditional purge, so a recreation between this
// function's own look and its purge request (one round trip) is not seen;
// the consumer's event-id gap check marks the workers stale if it happens.
func PurgeCovered(ctx context.Context, js jetstream.JetStream, name string, created time.Time, covered uint64, keep time.Duration, now time.Time) (Purged, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return Purged{}, fmt.Errorf("streams: purge %q: %w", name, err)
	}
	info := st.CachedInfo()
	if !CreatedByHintstream(info) {
		return Purged{}, fmt.Errorf("%w: %q", ErrForeignStream, name)
	}
	if !info.Created.Equal(created) {
		return Purged{}, fmt.Errorf("%w: %q created %v, snapshot's %v", ErrStreamChanged, name, info.Created, created)
	}
	before := info.State
	if before.Msgs == 0 || covered < before.FirstSeq {
		return Purged{}, nil
	}
	keepFrom := covered + 1
	cutoff := now.Add(-keep)
	if !before.LastTime.Before(cutoff) {
		// Some message is at least as new as the cutoff: keep from the
		// first such one if it comes before keepFrom.
		first, err := firstSince(ctx, js, name, cutoff)
		if err != nil {
			return Purged{}, err
		}
		keepFrom = min(keepFrom, first)
	}
	if keepFrom <= before.FirstSeq {
		return Purged{}, nil
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(keepFrom)); err != nil {
		return Purged{}, fmt.Errorf("streams: purge %q before seq %d: %w", name, keepFrom, err)
	}
	after, err := st.Info(ctx)
	if err != nil {
		return Purged{KeptFrom: keepFrom}, nil // purged; the figures are only for the log
	}
	return Purged{KeptFrom: keepFrom, Messages: before.Msgs - min(before.Msgs, after.State.Msgs),
		Bytes: before.Bytes - min(before.Bytes, after.State.Bytes)}, nil
}

// firstSince is the sequence of the first message stored at or after t
// (asked of the server through a one-message ordered consumer).
func firstSince(ctx context.Context, js jetstream.JetStream, name string, t time.Time) (uint64, error) {
	// A short inactivity bound: the server drops the consumer soon even
	// if the delete below does not get through.
	cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &t, HeadersOnly: true,
		InactiveThreshold: 30 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("streams: purge %q: find the first message since %v: %w", name, t, err)
	}
	defer func() {
		if ci := cons.CachedInfo(); ci != nil {
			_ = js.DeleteConsumer(ctx, name, ci.Name)
		}
	}()
	wait := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(max(wait, 100*time.Millisecond)))
	if err != nil {
		return 0, fmt.Errorf("streams: purge %q: find the first message since %v: %w", name, t, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return 0, fmt.Errorf("streams: purge %q: %w", name, err)
	}
	return md.Sequence.Stream, nil
}
