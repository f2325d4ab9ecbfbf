package engine

import (
	"errors"

	"github.com/hintstream/hintstream/eventplane"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// eventPlaneKV applies frames of Dynamo's event plane (subjects
// namespace.{ns}.component.{comp}[.endpoint.{ep}].kv-events, captured by
// the KV-events stream; see package eventplane): one RouterEvent per
// frame, inside an EventEnvelope. A frame that fails to decode (DecodeKV) returns its
// DecodeError, so it is counted (kv_events.malformed) and dead-lettered
// like any other KV event. A well-formed frame hintstream does not index
// (a cache-owner residency, an unknown tier) is counted in
// kv_events.event_plane_ignored and acked.
//
// The event id the index checks for gaps comes from the envelope's
// per-publisher sequence, not from the RouterEvent (see
// eventplane.Sequencer).
type eventPlaneKV struct {
	ix       EventApplier
	counters *metrics.Families
	seq      *eventplane.Sequencer
}

func newEventPlaneKV(ix EventApplier, counters *metrics.Families) *eventPlaneKV {
	return &eventPlaneKV{ix: ix, counters: counters, seq: eventplane.NewSequencer(0)}
}

func (a *eventPlaneKV) apply(fr eventplane.KVFrame) error {
	ev := kvevents.FromRouterEvent(fr.Event)
	ev.EventID = a.seq.EventID(ev.Worker, fr.Envelope, a.ix.LastEventID)
	if fr.Ignored != "" {
		// Its sequence still counts, or the next frame would look like a
		// gap: an empty removal on the device tier records the id and
		// changes nothing.
		a.counters.KVEventsEventPlaneIgnored.Inc(fr.Ignored)
		err := a.ix.Apply(kvevents.Event{Worker: ev.Worker, EventID: ev.EventID, Kind: schemas.KindRemoved})
		var uw *UnknownWorkerError
		if errors.Is(err, ErrHeld) || errors.As(err, &uw) || errors.Is(err, ErrRankOutOfRange) {
			return nil // an unregistered worker's or rank's: nothing of it is indexed
		}
		return err
	}
	var uw *UnknownWorkerError
	var re *RankError
	switch err := a.ix.Apply(ev); {
	case errors.Is(err, ErrHeld):
	case errors.As(err, &uw):
		if uw.Sample {
			return &schemas.DecodeError{Kind: "kv_event", Reason: ReasonUnknownWorker, Err: uw}
		}
	case errors.As(err, &re):
		if re.Sample {
			return &schemas.DecodeError{Kind: "kv_event", Reason: ReasonRankOutOfRange, Err: re}
		}
	case err == nil:
		a.counters.KVEventsApplied.Inc(ev.Kind.String())
	case errors.Is(err, index.ErrUnknownParent):
		a.counters.KVEventsUnknownParent.Inc()
	case errors.Is(err, index.ErrBadEvent):
		return &schemas.DecodeError{Kind: "kv_event", Reason: "invalid event", Err: err}
	default:
		return err
	}
	return nil
}
