package engine

import (
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// KVBatch is one KV-event message decoded, for ApplyKV.
type KVBatch = kvevents.Batch

// KV decodes one KV-event message (kvevents.Decoder.Decode) and applies
// it (ApplyKV), unless its subject names a worker the engine does not
// serve (EngineDeps.KeepWorker): that is known without decoding.
//
// The decoder is pooled: its memory (a RouterEvent, the events and their
// blocks) is garbage once they are applied, since the index copies what
// it keeps and the holding area clones what it holds (index.Index).
func (e *Engine) KV(m Message) error {
	if e.skipBySubject(m) {
		return nil
	}
	d, _ := e.kvDecoders.Get().(*kvevents.Decoder)
	if d == nil {
		d = &kvevents.Decoder{Limits: e.d.Limits}
	}
	defer e.kvDecoders.Put(d)
	b, err := d.Decode(kvevents.Message{Subject: m.Subject, Header: m.Header, Data: m.Data})
	if err != nil {
		return err
	}
	return e.ApplyKV(b)
}

// ApplyKV applies decoded KV events to the index (or the holding area in
// front of it, EngineDeps.KV), unless none is of a worker the engine
// serves (EngineDeps.KeepWorker), and acts on each one's fate
// (index.FateOf): it counts, and returns the error that dead-letters the
// message, if any. A stored event whose parent block is unknown is counted
// and dropped, as Dynamo's indexer does.
//
// An engine batch's sequence number (schemas.HeaderBridgeSeq) is its events'
// EventID, for the index's gap detection. When the bridge reports a new
// engine incarnation (b.Epoch changes for a worker), the engine restarted
// with an empty cache: its old blocks are cleared first.
//
// An event-plane frame (b.Envelope set) takes its event id from the
// envelope's per-publisher sequence, not from the RouterEvent (see
// kvevents.Sequencer). A well-formed frame hintstream does not index (a
// cache-owner residency, an unknown tier; b.Ignored) is counted in
// kv_events.event_plane_ignored and acked; its sequence still counts, or
// the next frame would look like a gap, so an empty removal on the device
// tier records the id and changes nothing.
//
// With an *index.Holding in front of the index, events of unregistered
// workers are held, and one message in HoldingConfig.SampleEvery of those
// it drops returns a DecodeError with the reason index.ReasonUnknownWorker,
// to be dead-lettered.
func (e *Engine) ApplyKV(b KVBatch) error {
	if e.skipByEvents(b) {
		return nil
	}
	evs, quiet := b.Events, false
	if b.Envelope != nil && len(evs) == 1 {
		ev := &evs[0]
		ev.EventID = e.planeSeq.EventID(ev.Worker, *b.Envelope, e.kv.LastEventID)
		if b.Ignored != "" {
			e.counters.KVEventsEventPlaneIgnored.Inc(b.Ignored)
			*ev = kvevents.Event{Worker: ev.Worker, EventID: ev.EventID, Kind: schemas.KindRemoved}
			quiet = true // nothing of it is indexed: no count, no dead letter
		}
	}
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
	if err := kvevents.CheckSubjectWorker("load", m.Subject, l.WorkerID); err != nil {
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
// applier is an *index.Holding, which knows them): 65,546 reports for an
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
