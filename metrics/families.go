// Package metrics defines hintstream's counters once, as typed Prometheus
// families (client_golang) with HELP texts and known label values, on a
// registry of their own (Families, New; Receiver for the sink). Call
// sites bump typed fields; readers (replay, the load test, the shutdown
// summary) read them back with Value, Values and Total, never by name.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/eventplane"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/tooltime"
)

// Label values used by several families.
var (
	// dropReasons are what actions.DropReason gives for a hint the
	// sender refused (actions.ErrQueueFull, ErrExpired, ErrClosed,
	// ErrBudget, anything else).
	dropReasons = []string{"queue_full", "expired", "closed", "budget", "error"}
	// pinSkips are the reasons a tool-call response gets no pin.
	pinSkips = []string{"unknown_worker", "no_layout", "no_full_page", "request_not_found", "encode"}
)

const (
	// ReasonUnknownWorker is hints.ReasonUnknownWorker (hints imports
	// this package, so the value is repeated; hints.TestMetricsReasonsAgree
	// checks they agree).
	ReasonUnknownWorker = "unknown worker"
	// ReasonMalformed is the dead-letter reason of a trigger event whose
	// error says no better (hints.Outcome.Reason).
	ReasonMalformed = "malformed"
)

// Families are hintstream's counters and gauges, each family defined
// once, here, with its HELP text and its known label values: every
// series of a known label exists at 0 from New, so a fresh scrape lists
// every family. The exposed names are those of the dotted counters they
// replace ("requests.received" → hintstream_requests_received_total), on
// which dashboards, the e2e tests and the docs rely.
//
// The tool-labelled families (ToolObserved, ToolExpected) are not bounded
// here: package observe exports the top tools only (observe/toplabels.go).
// Families is safe for concurrent use.
type Families struct {
	set

	// Agent are the families of agent-aware hints and hint outcomes
	// (agent.go).
	Agent *Agent

	// Trigger consumers (LLM_REQUESTS, LLM_RESPONSES).
	RequestsReceived, RequestsTransientErrors, RequestsHeaderUnrecognised *Counter
	RequestsPlain, RequestsWakeup                                         *Counter
	RequestsMalformed                                                     *CounterVec
	RequestsAckErrors, RequestsConsumerRecreated, RequestsMaxDeliveries   *Counter

	ResponsesReceived, ResponsesNoPin, ResponsesRetried                    *Counter
	ResponsesMalformed                                                     *CounterVec
	ResponsesAckErrors, ResponsesConsumerRecreated, ResponsesMaxDeliveries *Counter

	// Hints by kind.
	HintsPrefetchQueued                        *Counter
	HintsPrefetchSkipped, HintsPrefetchDropped *CounterVec
	HintsPinQueued                             *Counter
	HintsPinSkipped, HintsPinDropped           *CounterVec
	HintsRenewQueued                           *Counter
	HintsRenewDropped                          *CounterVec
	HintsReleaseQueued                         *Counter
	HintsReleaseDropped                        *CounterVec

	// Tool-call pins and their renewals.
	PinsRequestIndexFull, PinsSlotsFull *Counter
	PinsExpectedFrom                    *CounterVec
	PinsRenewalEnded, PinsRenewalErrors *Counter
	PinsRenewalSkipped                  *CounterVec
	ToolDiscarded                       *Counter
	ToolObserved                        *CounterVec
	ToolExpected                        *GaugeVec

	// Affinity writes (--affinity).
	AffinityWritten                  *Counter
	AffinityDropped, AffinitySkipped *CounterVec

	// State consumers (KV_EVENTS, KV_LOAD) and the holding area.
	KVEventsReceived, KVEventsApplyErrors, KVEventsDeadLetterErrors   *Counter
	KVEventsMalformed, KVEventsApplied, KVEventsDropped               *CounterVec
	KVEventsEventPlaneIgnored                                         *CounterVec
	KVEventsHeld, KVEventsPromoted, KVEventsUnknownParent             *Counter
	KVEventsUnknownTier, KVEventsEngineRestarts, KVEventsSkippedModel *Counter
	KVEventsPrunedWorkers, KVEventsPurged                             *Counter
	LoadReceived, LoadApplyErrors, LoadDeadLetterErrors               *Counter
	LoadMalformed                                                     *CounterVec

	// Snapshots, streams, registry.
	SnapshotsLoaded, SnapshotsSaved, SnapshotsErrors *Counter
	SnapshotsReclaimed, SnapshotsReclaimedChunks     *Counter
	StreamsRecreated                                 *Counter
	RegistryInvalidRecords                           *CounterVec

	orphans orphans
}

// New returns every family at 0, registered on a registry of its own
// (Registry).
func New() *Families {
	f := &Families{set: newSet(), orphans: newOrphans()}
	b := builder{&f.set}
	f.Agent = newAgent(f)

	f.RequestsReceived = b.counter("requests.received", "Request events delivered by the LLM_REQUESTS consumer, counted on each delivery (redeliveries included) before decoding.")
	f.RequestsTransientErrors = b.counter("requests.transient_errors", "Request events nak'ed for a retry because a store they need failed (not their content).")
	f.RequestsHeaderUnrecognised = b.counter("requests.header_unrecognised", "Request events with a header that looks like a hint header but is not one (counted, then handled by the wake-up header alone).")
	f.RequestsPlain = b.counter("requests.plain", "Request events that are neither a wake-up nor odd-headed: indexed (for pins) and acked without a prefetch.")
	f.RequestsWakeup = b.counter("requests.wakeup", "Wake-up request events (a tool call is about to return): each is one prefetch decision.")
	f.RequestsMalformed = b.vec("requests.malformed", "reason", "Request events dead-lettered and terminated because they can never be processed, by decode reason.", append([]string{ReasonMalformed}, schemas.CommonDecodeReasons...)...)
	f.RequestsAckErrors = b.counter("requests.ack_errors", "Acks of request events that JetStream did not confirm (the event will come back).")
	f.RequestsConsumerRecreated = b.counter("requests.consumer_recreated", "Times the durable requests consumer was found deleted and created again.")
	f.RequestsMaxDeliveries = b.counter("requests.max_deliveries", "Request events that ran out of deliveries and were copied to the dead-letter subject.")

	f.ResponsesReceived = b.counter("responses.received", "Response events delivered by the LLM_RESPONSES consumer, counted on each delivery before decoding.")
	f.ResponsesNoPin = b.counter("responses.no_pin", "Response events acked without a pin: not a tool call, or pins do not apply to them.")
	f.ResponsesRetried = b.counter("responses.retried", "Tool-call responses nak'ed for a retry because their request was not indexed yet.")
	f.ResponsesMalformed = b.vec("responses.malformed", "reason", "Response events dead-lettered and terminated because they can never be processed, by decode reason.", append([]string{ReasonMalformed}, schemas.CommonDecodeReasons...)...)
	f.ResponsesAckErrors = b.counter("responses.ack_errors", "Acks of response events that JetStream did not confirm (the event will come back).")
	f.ResponsesConsumerRecreated = b.counter("responses.consumer_recreated", "Times the durable responses consumer was found deleted and created again.")
	f.ResponsesMaxDeliveries = b.counter("responses.max_deliveries", "Response events that ran out of deliveries and were copied to the dead-letter subject.")

	f.HintsPrefetchQueued = b.counter("hints.prefetch.queued", "Prefetch hints handed to the sender's queue, one per wake-up decided.")
	f.HintsPrefetchSkipped = b.vec("hints.prefetch.skipped", "reason", "Wake-ups given no prefetch hint, by reason: expired (older than --prefetch-ttl), no_worker (no candidate), encode.", "expired", "no_worker", "encode")
	f.HintsPrefetchDropped = b.vec("hints.prefetch.dropped", "reason", "Prefetch hints the sender refused to queue, by reason.", dropReasons...)
	f.HintsPinQueued = b.counter("hints.pin.queued", "Tool-call pin hints handed to the sender's queue.")
	f.HintsPinSkipped = b.vec("hints.pin.skipped", "reason", "Tool-call responses given no pin hint, by reason.", pinSkips...)
	f.HintsPinDropped = b.vec("hints.pin.dropped", "reason", "Pin hints the sender refused to queue, by reason.", dropReasons...)
	f.HintsRenewQueued = b.counter("hints.renew.queued", "Pin renewals handed to the sender's queue, one per renewal of a held pin.")
	f.HintsRenewDropped = b.vec("hints.renew.dropped", "reason", "Pin renewals the sender refused to queue, by reason.", dropReasons...)
	f.HintsReleaseQueued = b.counter("hints.release.queued", "Pin releases handed to the sender's queue, sent when the session's next request arrives.")
	f.HintsReleaseDropped = b.vec("hints.release.dropped", "reason", "Pin releases the sender refused to queue, by reason.", dropReasons...)

	f.PinsRequestIndexFull = b.counter("pins.request_index_full", "Requests not recorded for a later pin because the request index (KV bucket) was full.")
	f.PinsSlotsFull = b.counter("pins.slots_full", "Pins not recorded in the slot bucket because it was full.")
	f.PinsExpectedFrom = b.vec("pins.expected_from", "source", "Pins by where their expected tool time came from, counted as each pin is decided.",
		tooltime.Default.String(), tooltime.Learned.String(), tooltime.AnyTool.String(), tooltime.Provisional.String())
	f.PinsRenewalEnded = b.counter("pins.renewal_ended", "Pins no longer renewed because their tool call outlasted the renewal cap (--pin-renew-max).")
	f.PinsRenewalErrors = b.counter("pins.renewal_errors", "Pin renewals not recorded in the slot bucket (tried again shortly).")
	f.PinsRenewalSkipped = b.vec("pins.renewal_skipped", "reason", "Pin renewals given up, by reason (budget: the pin expired before a renewal pass could reach it).", "budget")
	f.ToolDiscarded = b.counter("tooltime.discarded", "Observed tool times the learner discarded as implausible.")
	f.ToolObserved = b.toolVec("tooltime.observed", "Tool times observed (request after a tool call), by tool; the top --metrics-top-tools tools by this count are exported, the rest as other.")
	f.ToolExpected = b.toolGauge("tooltime.expected_ms", "hintstream_tooltime_expected_seconds", "The learned expected time of a tool call, by tool, updated on each observation.")

	f.AffinityWritten = b.counter("affinity.written", "Session affinity records written to the affinity bucket.")
	f.AffinityDropped = b.vec("affinity.dropped", "reason", "Session affinity records not written, by reason: queue_full, closed (shutting down), error.", "queue_full", "closed", "error")
	f.AffinitySkipped = b.vec("affinity.skipped", "reason", "Decisions with no affinity record to write, by reason (no_session: the request had none).", "no_session")

	f.KVEventsReceived = b.counter("kv_events.received", "KV event messages delivered by the KV_EVENTS consumer, counted before decoding.")
	f.KVEventsApplyErrors = b.counter("kv_events.apply_errors", "KV event messages that failed to apply for a reason other than their content.")
	f.KVEventsDeadLetterErrors = b.counter("kv_events.dead_letter_errors", "Malformed KV event messages whose copy to the dead-letter subject failed.")
	f.KVEventsMalformed = b.vec("kv_events.malformed", "reason", "KV event messages dead-lettered and skipped because they can never be applied, by reason.", append([]string{"invalid event", ReasonUnknownWorker}, schemas.CommonDecodeReasons...)...)
	f.KVEventsApplied = b.vec("kv_events.applied", "kind", "KV events applied to the index, by kind.",
		schemas.KindStored.String(), schemas.KindRemoved.String(), schemas.KindCleared.String())
	f.KVEventsDropped = b.vec("kv_events.dropped", "reason", "KV events dropped from the holding area, by reason (their worker never registered).", ReasonUnknownWorker)
	f.KVEventsEventPlaneIgnored = b.vec("kv_events.event_plane_ignored", "reason", "Well-formed event-plane frames with nothing to index, by reason.",
		eventplane.IgnoreResidencyDomain, eventplane.IgnoreTier)
	f.KVEventsHeld = b.counter("kv_events.held", "KV events held because their worker is not registered yet.")
	f.KVEventsPromoted = b.counter("kv_events.promoted", "Held KV events applied once their worker registered.")
	f.KVEventsUnknownParent = b.counter("kv_events.unknown_parent", "Stored KV events dropped because their parent block is not indexed.")
	f.KVEventsUnknownTier = b.counter("kv_events.unknown_tier", "KV events ignored for a storage tier this version does not rank.")
	f.KVEventsEngineRestarts = b.counter("kv_events.engine_restarts", "Engine restarts seen (a new epoch header), each clearing that worker's engine tiers.")
	f.KVEventsSkippedModel = b.counter("kv_events.skipped_model", "KV events skipped because their worker serves a model outside --models.")
	f.KVEventsPrunedWorkers = b.counter("kv_events.pruned_workers", "Workers removed from the index after leaving the registry.")
	f.KVEventsPurged = b.counter("kv_events.purged", "KV_EVENTS messages purged after a snapshot covered them.")
	f.LoadReceived = b.counter("load.received", "Load reports delivered by the KV_LOAD consumer, counted before decoding.")
	f.LoadApplyErrors = b.counter("load.apply_errors", "Load reports that failed to apply for a reason other than their content.")
	f.LoadDeadLetterErrors = b.counter("load.dead_letter_errors", "Malformed load reports whose copy to the dead-letter subject failed.")
	f.LoadMalformed = b.vec("load.malformed", "reason", "Load reports dead-lettered and skipped because they can never be applied, by reason.", append([]string{"too many workers reporting load"}, schemas.CommonDecodeReasons...)...)

	f.SnapshotsLoaded = b.counter("snapshots.loaded", "Index snapshots loaded at start-up.")
	f.SnapshotsSaved = b.counter("snapshots.saved", "Index snapshots saved, every --snapshot-interval.")
	f.SnapshotsErrors = b.counter("snapshots.errors", "Index snapshots that failed to save.")
	f.SnapshotsReclaimed = b.counter("snapshots.reclaimed", "Old or orphaned snapshot objects deleted.")
	f.SnapshotsReclaimedChunks = b.counter("snapshots.reclaimed_chunks", "Chunk messages of the snapshot objects deleted.")
	f.StreamsRecreated = b.counter("streams.recreated", "Streams found deleted and created again.")
	f.RegistryInvalidRecords = b.vec("registry.invalid_records", "reason", "Worker records the registry refused, by reason; each record is counted once.",
		schemas.ReasonBlockSize, schemas.ReasonNoEndpoints, schemas.ReasonTooManyEndpoints, schemas.ReasonCurveKey,
		schemas.ReasonEndpointTooLong, schemas.ReasonInproc, schemas.ReasonIPCNotAllowed, schemas.ReasonBadScheme,
		schemas.ReasonBadHost, schemas.ReasonWildcardHost, schemas.ReasonBadPort,
		registry.ReasonBadKey, registry.ReasonIDMismatch, registry.ReasonMalformed)
	return f
}

// Registry is the registry every family is registered on.
func (f *set) Registry() *prometheus.Registry { return f.reg }

// Collectors returns every family but the tool-labelled ones (ToolObserved,
// ToolExpected), which an exporter bounds itself.
func (f *set) Collectors() []prometheus.Collector {
	out := make([]prometheus.Collector, 0, len(f.all))
	for _, c := range f.all {
		out = append(out, c)
	}
	return out
}

// Names returns every family's exposed name, the tool-labelled ones
// included.
func (f *set) Names() []string {
	var out []string
	for _, c := range append(append([]family{}, f.all...), f.tool...) {
		out = append(out, c.Name())
	}
	return out
}

// Summary returns every nonzero value under the dotted names of old, for
// the shutdown log line: "requests.received", "requests.malformed" (the
// total) and "requests.malformed|bad json", "tooltime.expected_ms|search"
// (in milliseconds).
func (f *set) Summary() map[string]uint64 {
	out := map[string]uint64{}
	for _, c := range f.all {
		c.summarize(out)
	}
	for _, c := range f.tool {
		c.summarize(out)
	}
	return out
}

// Trigger returns the counters the transport shares for a trigger kind
// ("requests" or "responses"). Kinds are code constants; another kind
// gets counters that count but are not exported.
func (f *Families) Trigger(kind string) Trigger {
	switch kind {
	case "requests":
		return Trigger{f.RequestsMalformed, f.RequestsAckErrors, f.RequestsConsumerRecreated, f.RequestsMaxDeliveries}
	case "responses":
		return Trigger{f.ResponsesMalformed, f.ResponsesAckErrors, f.ResponsesConsumerRecreated, f.ResponsesMaxDeliveries}
	}
	return f.orphans.trigger
}

// Trigger are a trigger stream's transport counters.
type Trigger struct {
	Malformed                                   *CounterVec
	AckErrors, ConsumerRecreated, MaxDeliveries *Counter
}

// State returns a state stream's counters ("kv_events" or "load");
// another kind gets counters that count but are not exported.
func (f *Families) State(kind string) State {
	switch kind {
	case "kv_events":
		return State{f.KVEventsReceived, f.KVEventsApplyErrors, f.KVEventsDeadLetterErrors, f.KVEventsMalformed}
	case "load":
		return State{f.LoadReceived, f.LoadApplyErrors, f.LoadDeadLetterErrors, f.LoadMalformed}
	}
	return f.orphans.state
}

// State are a state stream's counters.
type State struct {
	Received, ApplyErrors, DeadLetterErrors *Counter
	Malformed                               *CounterVec
}

// Hint returns the counters of a pin-endpoint hint kind ("pin", "renew"
// or "release"); another kind gets counters that are not exported.
func (f *Families) Hint(kind string) (queued *Counter, dropped *CounterVec) {
	switch kind {
	case "pin":
		return f.HintsPinQueued, f.HintsPinDropped
	case "renew":
		return f.HintsRenewQueued, f.HintsRenewDropped
	case "release":
		return f.HintsReleaseQueued, f.HintsReleaseDropped
	}
	return f.orphans.queued, f.orphans.dropped
}

// orphans are the counters of an unknown kind, on a registry nobody
// gathers: the call sites stay free of nil checks.
type orphans struct {
	trigger Trigger
	state   State
	queued  *Counter
	dropped *CounterVec
}

func newOrphans() orphans {
	b := builder{&set{reg: prometheus.NewRegistry()}}
	return orphans{
		trigger: Trigger{b.vec("unknown.malformed", "reason", "-"), b.counter("unknown.ack_errors", "-"),
			b.counter("unknown.consumer_recreated", "-"), b.counter("unknown.max_deliveries", "-")},
		state: State{b.counter("unknown.received", "-"), b.counter("unknown.apply_errors", "-"),
			b.counter("unknown.dead_letter_errors", "-"), b.vec("unknown.state_malformed", "reason", "-")},
		queued:  b.counter("unknown.queued", "-"),
		dropped: b.vec("unknown.dropped", "reason", "-"),
	}
}

// builder defines families on f, registering each.
type builder struct{ f *set }

// set is a registry and the families on it.
type set struct {
	reg  *prometheus.Registry
	all  []family // registered and exported as they are
	tool []family // registered; an exporter bounds them
}

func newSet() set { return set{reg: prometheus.NewRegistry()} }

const ns = "hintstream_"

// name gives a dotted key's exposed name: "a.b" → hintstream_a_b_total.
func name(key string) string {
	b := []byte(key)
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			b[i] = '_'
		}
	}
	return ns + string(b) + "_total"
}

func (b builder) counter(key, help string) *Counter {
	c := &Counter{key: key, name: name(key),
		c: prometheus.NewCounter(prometheus.CounterOpts{Name: name(key), Help: help})}
	b.f.reg.MustRegister(c.c)
	b.f.all = append(b.f.all, c)
	return c
}

func (b builder) newVec(key, label, help string, known []string) *CounterVec {
	v := &CounterVec{key: key, name: name(key), help: help, label: label, known: known,
		v: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name(key), Help: help}, []string{label})}
	for _, lv := range known {
		v.v.WithLabelValues(lv)
	}
	b.f.reg.MustRegister(v.v)
	return v
}

func (b builder) vec(key, label, help string, known ...string) *CounterVec {
	v := b.newVec(key, label, help, known)
	b.f.all = append(b.f.all, v)
	return v
}

// toolVec is labelled tool, with tool="other" (tooltime.Other) at 0.
func (b builder) toolVec(key, help string) *CounterVec {
	v := b.newVec(key, "tool", help, []string{tooltime.Other})
	b.f.tool = append(b.f.tool, v)
	return v
}

// toolGauge is labelled tool; its series appear as tools are learned (a
// 0 s expected time would be a false reading).
func (b builder) toolGauge(key, metric, help string) *GaugeVec {
	g := &GaugeVec{key: key, name: metric, help: help, label: "tool",
		v: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metric, Help: help}, []string{"tool"})}
	b.f.reg.MustRegister(g.v)
	b.f.tool = append(b.f.tool, g)
	return g
}

// Receiver are the counters of a hint receiver (package receiver, the
// sink command), on a registry of their own.
type Receiver struct {
	set

	Received, Invalid, Duplicate, Expired, UnknownAction *Counter
	Delivered                                            *CounterVec
}

// NewReceiver returns a receiver's counters at 0.
func NewReceiver() *Receiver {
	r := &Receiver{set: newSet()}
	b := builder{&r.set}
	r.Received = b.counter("receiver.received", "Hint messages the receiver read, before decoding.")
	r.Invalid = b.counter("receiver.invalid", "Hint messages that did not decode or validate, dropped.")
	r.Duplicate = b.counter("receiver.duplicate", "Hint messages dropped as a repeat of a message id seen within the dedup window.")
	r.Expired = b.counter("receiver.expired", "Prefetch actions dropped because they expired before they arrived.")
	r.UnknownAction = b.counter("receiver.unknown_action", "Actions of a type the receiver does not handle, skipped.")
	// The action types of actions.ActionPrefetch and actions.ActionPin
	// (literal here: package actions needs libzmq).
	r.Delivered = b.vec("receiver.delivered", "reason", "Actions handed to the handler, by action type.", "kv.prefetch", "kv.pin")
	return r
}
