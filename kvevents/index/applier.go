package index

import (
	"sync"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// ApplierConfig configures an Applier.
type ApplierConfig struct {
	// KeepWorker, when set, limits the KV events applied to those of the
	// workers it accepts (--models); the others are counted in
	// kv_events.skipped_model.
	KeepWorker func(workerID uint64) bool
	// Counters: nil gives private counters.
	Counters *metrics.Families
}

// Applier is KV ingestion's one applier: the live consumers, a replay
// and the simulator hand it each message's decoded batch
// (kvevents.Decoder.Decode), and it applies the events to an Index (the
// holding area in front of the index, or the index itself) and acts on
// each one's fate (FateOf). As llm-d's kv-cache pool hands decoded events
// straight to its kvblock.Index, nothing of the decisions is on the way.
// Safe for concurrent use, with one worker's messages applied by one
// goroutine at a time.
type Applier struct {
	ix       Index
	keep     func(uint64) bool
	counters *metrics.Families

	epochs  sync.Map                               // kvevents.WorkerKey -> string (Apply)
	applied map[schemas.EventKind]*metrics.Counter // looked up once: one is bumped per event
	// planeSeq numbers event-plane frames for the index's gap check.
	planeSeq *kvevents.Sequencer
}

// NewApplier makes the applier of KV events to ix.
func NewApplier(ix Index, cfg ApplierConfig) *Applier {
	a := &Applier{ix: ix, keep: cfg.KeepWorker, counters: cfg.Counters,
		applied: map[schemas.EventKind]*metrics.Counter{}, planeSeq: kvevents.NewSequencer(0)}
	if a.counters == nil {
		a.counters = metrics.New()
	}
	for _, k := range []schemas.EventKind{schemas.KindStored, schemas.KindRemoved, schemas.KindCleared} {
		a.applied[k] = a.counters.KVEventsApplied.With(k.String())
	}
	return a
}

// Skips reports whether a message on subject is of a worker not kept
// (ApplierConfig.KeepWorker), which the subject (kv.events.<worker_id>)
// tells without decoding; it counts it in kv_events.skipped_model. On
// other subjects (Dynamo's single queue subject) Apply tells from the
// decoded events. A message that does not decode is dead-lettered as
// usual; an event-plane frame is not filtered.
func (a *Applier) Skips(subject string) bool {
	if a.keep == nil {
		return false
	}
	id, err := streams.WorkerFromSubject(subject)
	if err != nil || a.keep(id) {
		return false
	}
	a.counters.KVEventsSkippedModel.Inc()
	return true
}

// skipsEvents reports whether none of b's events is of a kept worker.
func (a *Applier) skipsEvents(b kvevents.Batch) bool {
	if a.keep == nil || b.Envelope != nil || len(b.Events) == 0 {
		return false
	}
	for _, ev := range b.Events {
		if a.keep(ev.Worker.WorkerID) {
			return false
		}
	}
	a.counters.KVEventsSkippedModel.Inc()
	return true
}

// Apply applies one message's decoded KV events, unless none is of a
// kept worker (ApplierConfig.KeepWorker), and acts on each one's fate
// (FateOf): it counts, and returns the error that dead-letters the
// message, if any. A stored event whose parent block is unknown is counted
// and dropped, as Dynamo's indexer does. b's events are not kept past the
// return (see Index).
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
// With a *Holding in front of the index, events of unregistered workers
// are held, and one message in HoldingConfig.SampleEvery of those it
// drops returns a DecodeError with the reason ReasonUnknownWorker, to be
// dead-lettered.
func (a *Applier) Apply(b kvevents.Batch) error {
	if a.skipsEvents(b) {
		return nil
	}
	evs, quiet := b.Events, false
	if b.Envelope != nil && len(evs) == 1 {
		ev := &evs[0]
		ev.EventID = a.planeSeq.EventID(ev.Worker, *b.Envelope, a.ix.LastEventID)
		if b.Ignored != "" {
			a.counters.KVEventsEventPlaneIgnored.Inc(b.Ignored)
			*ev = kvevents.Event{Worker: ev.Worker, EventID: ev.EventID, Kind: schemas.KindRemoved}
			quiet = true // nothing of it is indexed: no count, no dead letter
		}
	}
	if ep := b.Epoch; ep != "" && len(evs) > 0 {
		k := evs[0].Worker
		if prev, ok := a.epochs.Swap(k, ep); ok && prev.(string) != ep {
			a.counters.KVEventsEngineRestarts.Inc()
			// The engine's own tiers died with it; the shared store did not.
			for _, tier := range []schemas.StorageTier{"", schemas.TierHostPinned, schemas.TierDisk} {
				err := a.ix.Apply(kvevents.Event{Worker: k, Kind: schemas.KindCleared, Tier: tier})
				if f := FateOf(err); f != Applied && f != Held && f != Dropped {
					return err
				}
			}
		}
	}
	var unknown, badRank error // the first sampled of each
	for _, ev := range evs {
		err := a.ix.Apply(ev)
		switch FateOf(err) {
		case Applied:
			switch c, ok := a.applied[ev.Kind]; {
			case quiet:
			case ok:
				c.Inc()
			default:
				a.counters.KVEventsApplied.Inc(ev.Kind.String())
			}
		case Held:
		case Dropped:
			if unknown == nil && !quiet && Sampled(err) {
				unknown = err
			}
		case RankRefused:
			if badRank == nil && !quiet && Sampled(err) {
				badRank = err
			}
		case UnknownParent:
			a.counters.KVEventsUnknownParent.Inc()
		case UnknownTier:
			// Counted and ignored, not dead-lettered: a newer engine
			// or Dynamo may name a tier this version does not rank.
			a.counters.KVEventsUnknownTier.Inc()
		case Invalid:
			return &schemas.DecodeError{Kind: "kv_event", Reason: "invalid event", Err: err}
		default:
			return err
		}
	}
	if unknown != nil {
		return &schemas.DecodeError{Kind: "kv_event", Reason: ReasonUnknownWorker, Err: unknown}
	}
	if badRank != nil {
		return &schemas.DecodeError{Kind: "kv_event", Reason: ReasonRankOutOfRange, Err: badRank}
	}
	return nil
}
