package engine

import (
	"github.com/hintstream/hintstream/eventplane"
	"github.com/hintstream/hintstream/kvevents"
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
	counters *metrics.Families
	seq      *eventplane.Sequencer
}

func newEventPlaneKV(counters *metrics.Families) *eventPlaneKV {
	return &eventPlaneKV{counters: counters, seq: eventplane.NewSequencer(0)}
}

func (a *eventPlaneKV) apply(e *Engine, fr eventplane.KVFrame) error {
	ev := kvevents.FromRouterEvent(fr.Event)
	ev.EventID = a.seq.EventID(ev.Worker, fr.Envelope, e.kv.LastEventID)
	if fr.Ignored != "" {
		// Its sequence still counts, or the next frame would look like a
		// gap: an empty removal on the device tier records the id and
		// changes nothing; an unregistered worker's or rank's is nothing
		// of it indexed.
		a.counters.KVEventsEventPlaneIgnored.Inc(fr.Ignored)
		return e.applyEvents([]kvevents.Event{{Worker: ev.Worker, EventID: ev.EventID, Kind: schemas.KindRemoved}}, true)
	}
	return e.applyEvents([]kvevents.Event{ev}, false)
}
