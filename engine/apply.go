package engine

import (
	"strconv"

	"github.com/hintstream/hintstream/eventplane"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// KVBatch is one KV-event message decoded (DecodeKV), for ApplyKV: its events, or one
// frame of Dynamo's event plane.
type KVBatch struct {
	Events []kvevents.Event
	// Epoch is the bridge's engine incarnation (schemas.HeaderBridgeEpoch), ""
	// when the message names none.
	Epoch string
	// Frame is set, instead of Events, for a frame of Dynamo's event
	// plane (subjects namespace.….kv-events, see eventplane.go).
	Frame *eventplane.KVFrame
}

// DecodeKV decodes a message of the KV-events stream: Dynamo RouterEvent
// JSON, a vLLM/SGLang EventBatch in msgpack (array or tagged-map form;
// the worker comes from the subject), or an event-plane frame. A Dynamo
// RouterEvent's one event goes into *one, so the common case allocates no
// slice. Its errors match schemas.ErrMalformed (a *schemas.DecodeError
// names the reason).
func DecodeKV(lim schemas.Limits, m Message, one *[1]kvevents.Event) (KVBatch, error) {
	if eventplane.IsKVEventsSubject(m.Subject) {
		if err := lim.CheckHeaders("kv_event", m.Header); err != nil {
			return KVBatch{}, err
		}
		fr, err := eventplane.DecodeKVEvent(m.Data, lim)
		if err != nil {
			return KVBatch{}, err
		}
		return KVBatch{Frame: &fr}, nil
	}
	return decodeKV(lim, m, one, nil)
}

// decodeKV is DecodeKV past the event-plane case; with sc set, the
// message is decoded into sc's memory (see kvScratch) and one is unused.
func decodeKV(lim schemas.Limits, m Message, one *[1]kvevents.Event, sc *kvScratch) (KVBatch, error) {
	evs, err := decodeKVEvents(m, lim, one, sc)
	if err != nil {
		return KVBatch{}, err
	}
	return KVBatch{Events: evs, Epoch: m.Header.Get(schemas.HeaderBridgeEpoch)}, nil
}

// kvScratch is one KV message's decode memory, pooled per Engine: the
// RouterEvent is garbage once converted, so the next message decodes into
// it (schemas.Limits.DecodeRouterEventInto), and the events are decoded
// into the Decoder's reused memory, which is garbage once they are
// applied: the index copies what it keeps, and the Holding clones what it
// holds (index.Index).
type kvScratch struct {
	router schemas.RouterEvent
	dec    kvevents.Decoder
}

// KV decodes one KV-event message (DecodeKV) and applies it (ApplyKV),
// unless its subject names a worker the engine does not serve
// (EngineDeps.KeepWorker): that is known without decoding.
func (e *Engine) KV(m Message) error {
	if e.skipBySubject(m) {
		return nil
	}
	if eventplane.IsKVEventsSubject(m.Subject) {
		var one [1]kvevents.Event
		b, err := DecodeKV(e.d.Limits, m, &one)
		if err != nil {
			return err
		}
		return e.ApplyKV(b)
	}
	sc, _ := e.kvScratch.Get().(*kvScratch)
	if sc == nil {
		sc = new(kvScratch)
	}
	defer e.kvScratch.Put(sc)
	b, err := decodeKV(e.d.Limits, m, nil, sc)
	if err == nil {
		err = e.ApplyKV(b)
	}
	return err
}

// ApplyKV applies decoded KV events to the index (or the holding area in
// front of it, EngineDeps.KV), unless none is of a worker the engine
// serves (EngineDeps.KeepWorker). A stored event whose parent block is
// unknown is counted and dropped, as Dynamo's indexer does.
//
// An engine batch's sequence number (schemas.HeaderBridgeSeq) is its events'
// EventID, for the index's gap detection. When the bridge reports a new
// engine incarnation (b.Epoch changes for a worker), the engine restarted
// with an empty cache: its old blocks are cleared first. Event-plane
// frames take their event id from the envelope (see eventplane.go).
//
// With an *index.Holding in front of the index, events of unregistered
// workers are held, and one message in HoldingConfig.SampleEvery of those
// it drops returns a DecodeError with the reason index.ReasonUnknownWorker,
// to be dead-lettered.
func (e *Engine) ApplyKV(b KVBatch) error {
	if e.skipByEvents(b) {
		return nil
	}
	if b.Frame != nil {
		return e.ep.apply(e, *b.Frame)
	}
	evs := b.Events
	if ep := b.Epoch; ep != "" && len(evs) > 0 {
		k := evs[0].Worker
		if prev, ok := e.epochs.Swap(k, ep); ok && prev.(string) != ep {
			e.counters.KVEventsEngineRestarts.Inc()
			// The engine's own tiers died with it; the shared store did not.
			for _, tier := range []schemas.StorageTier{"", schemas.TierHostPinned, schemas.TierDisk} {
				err := e.kv.Apply(kvevents.Event{Worker: k, Kind: schemas.KindCleared, Tier: tier})
				if f := index.FateOf(err); f != index.Applied && f != index.Held && f != index.Dropped {
					return err
				}
			}
		}
	}
	return e.applyEvents(evs, false)
}

// applyEvents applies evs to the index and acts on each one's fate
// (index.FateOf), the one place that does: it counts, and returns the
// error that dead-letters the message, if any. A quiet batch (an
// event-plane frame hintstream does not index, applied only for its
// event id) counts no applied event and dead-letters no unregistered
// worker's.
func (e *Engine) applyEvents(evs []kvevents.Event, quiet bool) error {
	var unknown, badRank error // the first sampled of each
	for _, ev := range evs {
		err := e.kv.Apply(ev)
		switch index.FateOf(err) {
		case index.Applied:
			switch c, ok := e.applied[ev.Kind]; {
			case quiet:
			case ok:
				c.Inc()
			default:
				e.counters.KVEventsApplied.Inc(ev.Kind.String())
			}
		case index.Held:
		case index.Dropped:
			if unknown == nil && !quiet && index.Sampled(err) {
				unknown = err
			}
		case index.RankRefused:
			if badRank == nil && !quiet && index.Sampled(err) {
				badRank = err
			}
		case index.UnknownParent:
			e.counters.KVEventsUnknownParent.Inc()
		case index.UnknownTier:
			// Counted and ignored, not dead-lettered: a newer engine
			// or Dynamo may name a tier this version does not rank.
			e.counters.KVEventsUnknownTier.Inc()
		case index.Invalid:
			return &schemas.DecodeError{Kind: "kv_event", Reason: "invalid event", Err: err}
		default:
			return err
		}
	}
	if unknown != nil {
		return &schemas.DecodeError{Kind: "kv_event", Reason: index.ReasonUnknownWorker, Err: unknown}
	}
	if badRank != nil {
		return &schemas.DecodeError{Kind: "kv_event", Reason: index.ReasonRankOutOfRange, Err: badRank}
	}
	return nil
}

// decodeKVEvents decodes m's events (not an event-plane frame); a Dynamo
// RouterEvent's one goes into *one; with sc set, everything is decoded
// into sc's memory instead, valid until its next use.
func decodeKVEvents(m Message, lim schemas.Limits, one *[1]kvevents.Event, sc *kvScratch) ([]kvevents.Event, error) {
	if err := lim.CheckHeaders("kv_event", m.Header); err != nil {
		return nil, err
	}
	data := m.Data
	if f, ok := schemas.DetectFormat(m.Header.Get("Content-Type"), data); ok && f == schemas.FormatJSON {
		if sc != nil {
			if err := lim.DecodeRouterEventInto(data, &sc.router); err != nil {
				return nil, err
			}
			if err := checkSubjectWorker("kv_event", m.Subject, sc.router.WorkerID); err != nil {
				return nil, err
			}
			return sc.dec.RouterEvent(&sc.router), nil
		}
		ev, err := lim.DecodeRouterEvent(data)
		if err != nil {
			return nil, err
		}
		if err := checkSubjectWorker("kv_event", m.Subject, ev.WorkerID); err != nil {
			return nil, err
		}
		one[0] = kvevents.FromRouterEvent(ev)
		return one[:], nil
	}
	if !kvevents.IsEngineBatch(data) {
		return nil, &schemas.DecodeError{Kind: "kv_event", Reason: "neither a Dynamo RouterEvent nor an engine EventBatch"}
	}
	worker, err := streams.WorkerFromSubject(m.Subject)
	if err != nil {
		return nil, &schemas.DecodeError{Kind: "engine_batch", Reason: "subject names no worker id", Err: err}
	}
	var seq uint64
	if h := m.Header.Get(schemas.HeaderBridgeSeq); h != "" {
		if seq, err = strconv.ParseUint(h, 10, 64); err != nil {
			return nil, &schemas.DecodeError{Kind: "engine_batch", Reason: "invalid " + schemas.HeaderBridgeSeq + " header", Err: err}
		}
	}
	if sc != nil {
		return sc.dec.EngineBatch(data, worker, seq, lim)
	}
	return kvevents.DecodeEngineBatch(data, worker, seq, lim)
}

// DecodeLoad decodes a message of the load stream: a load report (a
// report without a worker id takes the one in its subject), or an
// event-plane kv_metrics frame (namespace.….kv_metrics), which carries
// its worker id inside.
func DecodeLoad(lim schemas.Limits, m Message) (*schemas.ActiveLoad, error) {
	if err := lim.CheckHeaders("load", m.Header); err != nil {
		return nil, err
	}
	if eventplane.IsLoadSubject(m.Subject) { // Dynamo's event plane
		_, l, err := eventplane.DecodeLoad(m.Data, lim)
		return l, err
	}
	l, err := lim.DecodeLoad(m.Data, m.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if l.WorkerID == 0 {
		if id, err := streams.WorkerFromSubject(m.Subject); err == nil {
			l.WorkerID = id
		}
	}
	if err := checkSubjectWorker("load", m.Subject, l.WorkerID); err != nil {
		return nil, err
	}
	return l, nil
}

// Load decodes one load message (DecodeLoad) and applies it (ApplyLoad).
func (e *Engine) Load(m Message) error {
	l, err := DecodeLoad(e.d.Limits, m)
	if err != nil {
		return err
	}
	return e.ApplyLoad(l)
}

// loadAdmitter says which (worker, dp rank) load reports are kept
// (*index.Holding).
type loadAdmitter interface {
	Admits(k kvevents.WorkerKey) (ok bool, reason string)
}

// ApplyLoad records a worker's decoded load for the worker choice.
//
// Only a registered worker's dp ranks are kept (when the engine's KV
// applier is a *Holding, which knows them): 65,546 reports for an
// unregistered kv.load.999 once filled the table, and real workers'
// reports were refused. Others are counted in load.refused, not
// dead-lettered: a worker may report load before its record is written,
// and its next report (they are periodic) is kept.
func (e *Engine) ApplyLoad(l *schemas.ActiveLoad) error {
	if ad, ok := e.kv.(loadAdmitter); ok {
		if ok, reason := ad.Admits(kvevents.WorkerKey{WorkerID: l.WorkerID, DpRank: l.DpRank}); !ok {
			e.counters.LoadRefused.Inc(reason)
			return nil
		}
	}
	if err := e.loads.Update(*l); err != nil {
		// Counted and dead-lettered like a malformed report: it is
		// dropped, and whoever floods kv.load.> should be found.
		return &schemas.DecodeError{Kind: "load", Reason: "too many workers reporting load", Err: err}
	}
	return nil
}
