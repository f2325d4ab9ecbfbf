package consumers

import (
	"errors"
	"strconv"
	"sync"

	"github.com/hintstream/hintstream/bridge"
	"github.com/hintstream/hintstream/eventplane"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// ApplyKVEvents returns the ApplyFunc of kv.events.<worker_id>: Dynamo
// RouterEvent JSON, or a vLLM/SGLang EventBatch in msgpack (array or
// tagged-map form; the worker comes from the subject), into the index. A
// stored event whose parent block is unknown is counted and dropped, as
// Dynamo's indexer does.
//
// An engine batch's sequence number (bridge.HeaderSeq) becomes its events'
// EventID, for the index's gap detection. When the bridge reports a new
// engine incarnation (bridge.HeaderEpoch changes for a worker), the engine
// restarted with an empty cache: its old blocks are cleared first.
// Frames of Dynamo's event plane (subjects namespace.….kv-events) are
// decoded by package eventplane instead (see consumers/eventplane.go).
//
// ix is the index, or a *Holding in front of it: then events of
// unregistered workers are held, and one message in
// HoldingConfig.SampleEvery of those it drops is dead-lettered with the
// reason ReasonUnknownWorker (see holding.go).
func ApplyKVEvents(ix EventApplier, lim schemas.Limits, counters *metrics.Families) ApplyFunc {
	var epochs sync.Map // kvevents.WorkerKey -> string
	// Counters, looked up once: one is bumped per event.
	applied := map[schemas.EventKind]*metrics.Counter{}
	for _, k := range []schemas.EventKind{schemas.KindStored, schemas.KindRemoved, schemas.KindCleared} {
		applied[k] = counters.KVEventsApplied.With(k.String())
	}
	ep := newEventPlaneKV(ix, lim, counters) // Dynamo's event plane (issue 13)
	return func(msg jetstream.Msg) error {
		if eventplane.IsKVEventsSubject(msg.Subject()) {
			return ep.apply(msg)
		}
		var one [1]kvevents.Event // a RouterEvent's, on the stack (issue 17)
		evs, err := decodeKVEvents(msg, lim, &one)
		if err != nil {
			return err
		}
		if ep := msg.Headers().Get(bridge.HeaderEpoch); ep != "" && len(evs) > 0 {
			k := evs[0].Worker
			if prev, ok := epochs.Swap(k, ep); ok && prev.(string) != ep {
				counters.KVEventsEngineRestarts.Inc()
				// The engine's own tiers died with it; the shared store did not.
				for _, tier := range []schemas.StorageTier{"", schemas.TierHostPinned, schemas.TierDisk} {
					err := ix.Apply(kvevents.Event{Worker: k, Kind: schemas.KindCleared, Tier: tier})
					if err != nil && !errors.Is(err, ErrHeld) && !errors.Is(err, ErrUnknownWorker) {
						return err
					}
				}
			}
		}
		var unknown *UnknownWorkerError
		for _, ev := range evs {
			var uw *UnknownWorkerError
			switch err := ix.Apply(ev); {
			case errors.Is(err, ErrHeld):
			case errors.As(err, &uw):
				if uw.Sample && unknown == nil {
					unknown = uw
				}
			case err == nil:
				if c, ok := applied[ev.Kind]; ok {
					c.Inc()
				} else {
					counters.KVEventsApplied.Inc(ev.Kind.String())
				}
			case errors.Is(err, kvevents.ErrUnknownParent):
				counters.KVEventsUnknownParent.Inc()
			case errors.Is(err, kvevents.ErrUnknownTier):
				// Counted and ignored, not dead-lettered: a newer engine
				// or Dynamo may name a tier this version does not rank.
				counters.KVEventsUnknownTier.Inc()
			case errors.Is(err, kvevents.ErrBadEvent):
				return &schemas.DecodeError{Kind: "kv_event", Reason: "invalid event", Err: err}
			default:
				return err
			}
		}
		if unknown != nil {
			return &schemas.DecodeError{Kind: "kv_event", Reason: ReasonUnknownWorker, Err: unknown}
		}
		return nil
	}
}

// decodeKVEvents decodes msg's events; a Dynamo RouterEvent's one goes
// into *one, so the common case allocates no slice.
func decodeKVEvents(msg jetstream.Msg, lim schemas.Limits, one *[1]kvevents.Event) ([]kvevents.Event, error) {
	if err := lim.CheckHeaders("kv_event", msg.Headers()); err != nil {
		return nil, err
	}
	data := msg.Data()
	if f, ok := schemas.DetectFormat(msg.Headers().Get("Content-Type"), data); ok && f == schemas.FormatJSON {
		ev, err := lim.DecodeRouterEvent(data)
		if err != nil {
			return nil, err
		}
		one[0] = kvevents.FromRouterEvent(ev)
		return one[:], nil
	}
	if !kvevents.IsEngineBatch(data) {
		return nil, &schemas.DecodeError{Kind: "kv_event", Reason: "neither a Dynamo RouterEvent nor an engine EventBatch"}
	}
	worker, err := streams.WorkerFromSubject(msg.Subject())
	if err != nil {
		return nil, &schemas.DecodeError{Kind: "engine_batch", Reason: "subject names no worker id", Err: err}
	}
	var seq uint64
	if h := msg.Headers().Get(bridge.HeaderSeq); h != "" {
		if seq, err = strconv.ParseUint(h, 10, 64); err != nil {
			return nil, &schemas.DecodeError{Kind: "engine_batch", Reason: "invalid " + bridge.HeaderSeq + " header", Err: err}
		}
	}
	return kvevents.DecodeEngineBatch(data, worker, seq, lim)
}

// ApplyLoad returns the ApplyFunc of kv.load.<worker_id>. A report without
// a worker id takes the one in its subject; an event-plane frame
// (namespace.….kv_metrics) carries its worker id inside.
func ApplyLoad(t *routing.LoadTable, lim schemas.Limits) ApplyFunc {
	return func(msg jetstream.Msg) error {
		if eventplane.IsLoadSubject(msg.Subject()) { // Dynamo's event plane (issue 13)
			return applyEventPlaneLoad(t, lim, msg)
		}
		if err := lim.CheckHeaders("load", msg.Headers()); err != nil {
			return err
		}
		l, err := lim.DecodeLoad(msg.Data(), msg.Headers().Get("Content-Type"))
		if err != nil {
			return err
		}
		if l.WorkerID == 0 {
			if id, err := streams.WorkerFromSubject(msg.Subject()); err == nil {
				l.WorkerID = id
			}
		}
		if err := t.Update(*l); err != nil {
			// Counted and dead-lettered like a malformed report: it is
			// dropped, and whoever floods kv.load.> should be found.
			return &schemas.DecodeError{Kind: "load", Reason: "too many workers reporting load", Err: err}
		}
		return nil
	}
}
