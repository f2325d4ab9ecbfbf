package eventplane

import (
	"context"
	"maps"
	"sync"

	"github.com/hintstream/hintstream/schemas"
)

// SequenceHandler takes the routing-time request lifecycle Dynamo's KV
// router publishes (ActiveSequenceEvent): an AddRequest when it books a
// request on a worker, MarkPrefillCompleted, Free. The decisions
// implement it; env is the frame's envelope (its publisher is the router
// and its sequence counts that router's frames). ev and what it holds
// are the handler's to keep.
//
// A frame may hold a batch of events: they are handed over in order, and
// an error stops the frame there. A frame retried after an error hands
// over its first events again, so the handler must take a repeated
// event (same request id and kind) as a no-op.
type SequenceHandler interface {
	HandleSequence(ctx context.Context, env Envelope, ev *ActiveSequenceEvent) error
}

// SequenceHandlerFunc is a func as a SequenceHandler.
type SequenceHandlerFunc func(ctx context.Context, env Envelope, ev *ActiveSequenceEvent) error

// HandleSequence calls f.
func (f SequenceHandlerFunc) HandleSequence(ctx context.Context, env Envelope, ev *ActiveSequenceEvent) error {
	return f(ctx, env, ev)
}

// SequenceReader is the consumer path of active_sequences_events frames:
// it decodes a message (by its subject, which must be one of
// IsActiveSequencesSubject's) and hands each event to Handler. A frame
// that cannot be decoded (a bad envelope, an unknown variant, a missing
// field) returns a *schemas.DecodeError, which the consumer counts by its
// reason and dead-letters; the handler sees none of its events.
//
// With TrackGaps, Read also counts the frames each publisher sent that
// it never saw (by the envelope's publisher_id and sequence), as the
// index does for kv-events frames. That count is exact only for a reader
// that sees every frame of the subject in order (an ordered consumer, or
// the bridge's one ZMQ socket): members of a consumer group each see a
// share of the frames and would count the others' as lost.
type SequenceReader struct {
	Limits    schemas.Limits
	Handler   SequenceHandler
	TrackGaps bool

	mu    sync.Mutex
	gaps  Gaps
	stats SequenceStats
}

// SequenceStats are a SequenceReader's counters since it was made.
type SequenceStats struct {
	Frames    uint64            // frames decoded
	Events    map[string]uint64 // events handed over, by SequenceKind name
	Malformed map[string]uint64 // frames refused, by DecodeError reason
	Gaps      GapStats          // with TrackGaps
}

// ReasonNotSequencesSubject is the DecodeError reason of a message whose
// subject is not an active_sequences_events subject.
const ReasonNotSequencesSubject = "subject is not an active_sequences_events subject"

// Read decodes one message and hands its events to the handler. Its
// error is the decode's (*schemas.DecodeError, errors.Is
// schemas.ErrMalformed) or the handler's, as the handler returned it.
func (r *SequenceReader) Read(ctx context.Context, subject string, data []byte) error {
	if !IsActiveSequencesSubject(subject) {
		return r.refuse(malformed(kindSequences, ReasonNotSequencesSubject, nil))
	}
	fr, err := DecodeActiveSequences(data, r.Limits)
	if err != nil {
		return r.refuse(err)
	}
	r.mu.Lock()
	r.stats.Frames++
	if r.TrackGaps {
		r.gaps.Observe(fr.Envelope.PublisherID, fr.Envelope.Sequence)
	}
	r.mu.Unlock()
	for i := range fr.Events {
		ev := &fr.Events[i]
		if err := r.Handler.HandleSequence(ctx, fr.Envelope, ev); err != nil {
			return err
		}
		r.mu.Lock()
		if r.stats.Events == nil {
			r.stats.Events = map[string]uint64{}
		}
		r.stats.Events[ev.Kind.String()]++
		r.mu.Unlock()
	}
	return nil
}

func (r *SequenceReader) refuse(err error) error {
	reason := "malformed"
	if de, ok := err.(*schemas.DecodeError); ok {
		reason = de.Reason
	}
	r.mu.Lock()
	if r.stats.Malformed == nil {
		r.stats.Malformed = map[string]uint64{}
	}
	r.stats.Malformed[reason]++
	r.mu.Unlock()
	return err
}

// Stats returns a copy of the counters.
func (r *SequenceReader) Stats() SequenceStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := SequenceStats{Frames: r.stats.Frames, Gaps: r.gaps.Stats(),
		Events: maps.Clone(r.stats.Events), Malformed: maps.Clone(r.stats.Malformed)}
	if out.Events == nil {
		out.Events = map[string]uint64{}
	}
	if out.Malformed == nil {
		out.Malformed = map[string]uint64{}
	}
	return out
}
