// Package metrics defines hintstream's counters once, as typed Prometheus
// families (client_golang) with HELP texts and known label values, on a
// registry of their own (Families, New; Receiver for the sink). Call
// sites bump typed fields; readers (replay, the load test, the shutdown
// summary) read them back with Value, Values and Total, never by name.
package metrics

import (
	"strings"

	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

// Label values used by several families.
var (
	// dropReasons are what actions.DropReason gives for a hint the
	// sender refused (actions.ErrQueueFull, ErrExpired, ErrClosed,
	// ErrBudget, anything else).
	dropReasons = []string{actions.DropQueueFull, actions.DropExpired, actions.DropClosed, actions.DropBudget, actions.DropError}
	// pinSkips are the reasons a tool-call response gets no pin.
	pinSkips = []string{"unknown_worker", "no_layout", "no_full_page", "request_not_found", "encode", "over_cap", "unknown_namespace",
		HashesKeyed, HashesUnsalted, "no_pages"}
	// prefetchSkips are the reasons a wake-up or a routed request gets
	// no prefetch.
	prefetchSkips = []string{"expired", "no_worker", "encode", "unknown_worker", HashesKeyed, HashesUnsalted, "no_pages"}
)

// The reasons a prompt known by sequence hashes gets no hint, because
// its hashes cannot match the workers' blocks (schemas.HashScheme*).
const (
	HashesKeyed    = "hashes_keyed"
	HashesUnsalted = "hashes_unsalted"
)

const (
	// ReasonUnknownWorker labels KV events of unregistered workers dropped
	// (index.ReasonUnknownWorker is this value).
	ReasonUnknownWorker = "unknown worker"
	// ReasonRankOutOfRange labels KV events and load reports refused for
	// their dp rank (index.ReasonRankOutOfRange is this value).
	ReasonRankOutOfRange = "dp rank out of range"
	// ReasonMalformed is the dead-letter reason of a trigger event whose
	// error says no better (engine.Outcome.Reason).
	ReasonMalformed = "malformed"
	// ReasonWorkerMismatch is kvevents.ReasonWorkerMismatch: a KV event or
	// load report whose body names another worker than its subject.
	ReasonWorkerMismatch = "worker_id disagrees with subject"
)

// Families are hintstream's counters and gauges, each family defined
// once, here, with its HELP text and its known label values: every
// series of a known label exists at 0 from New, so a fresh scrape lists
// every family. Each is declared by its exposed name, on which dashboards,
// the e2e tests and the docs rely.
//
// The tool-labelled families (ToolObserved, ToolExpected) are not bounded
// here: package observe exports the top tools only (observe/toplabels.go).
// Families is safe for concurrent use.
type Families struct {
	set

	// Agent are the families of agent-aware hints and hint outcomes
	// (agent.go).
	Agent *Agent
	// RequestTrace are the families of Dynamo's request-trace consumer
	// (requesttrace.go).
	RequestTrace *RequestTrace

	// Trigger consumers (LLM_REQUESTS, LLM_RESPONSES).
	RequestsReceived, RequestsTransientErrors, RequestsHeaderUnrecognised *Counter
	RequestsPlain, RequestsWakeup                                         *Counter
	RequestsMalformed                                                     *CounterVec
	RequestsAckErrors, RequestsConsumerRecreated, RequestsMaxDeliveries   *Counter
	RequestsExpiredUnread, ResponsesExpiredUnread                         *Counter

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
	HintsRetainQueued                          *Counter    // hintstream.retain to the serving worker (--retain-on-worker)
	HintsRetainDropped                         *CounterVec // by drop reason, and "encode" / "no_endpoint"

	// Tool-call pins kept in LMCache through its controller (lmcachepin.go).
	LMCachePins LMCachePins

	// Tool-call pins and their renewals.
	PinsRequestIndexFull, PinsSlotsFull *Counter
	PinsExpectedFrom                    *CounterVec
	PinsRenewalEnded, PinsRenewalErrors *Counter
	PinsRenewalSkipped                  *CounterVec
	PinsCut                             *Counter
	PinsBudgetReleased                  *Counter
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
	// LoadRefused: reports of a worker or dp rank not registered.
	LoadRefused *CounterVec

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
	f.RequestTrace = newRequestTrace(f)

	f.RequestsReceived = b.counter("hintstream_requests_received_total", "Request events delivered by the LLM_REQUESTS consumer, counted on each delivery (redeliveries included) before decoding.")
	f.RequestsTransientErrors = b.counter("hintstream_requests_transient_errors_total", "Request events nak'ed for a retry because a store they need failed (not their content).")
	f.RequestsHeaderUnrecognised = b.counter("hintstream_requests_header_unrecognised_total", "Request events with a header that looks like a hint header but is not one (counted, then handled by the wake-up header alone).")
	f.RequestsPlain = b.counter("hintstream_requests_plain_total", "Request events that are neither a wake-up nor odd-headed: indexed (for pins) and acked without a prefetch.")
	f.RequestsWakeup = b.counter("hintstream_requests_wakeup_total", "Wake-up request events (a tool call is about to return): each is one prefetch decision.")
	f.RequestsMalformed = b.vec("hintstream_requests_malformed_total", "reason", "Request events dead-lettered and terminated because they can never be processed, by decode reason.", append([]string{ReasonMalformed}, schemas.CommonDecodeReasons...)...)
	f.RequestsAckErrors = b.counter("hintstream_requests_ack_errors_total", "Acks of request events that JetStream did not confirm (the event will come back).")
	f.RequestsConsumerRecreated = b.counter("hintstream_requests_consumer_recreated_total", "Times the durable requests consumer was found deleted and created again.")
	f.RequestsMaxDeliveries = b.counter("hintstream_requests_max_deliveries_total", "Request events that ran out of deliveries and were copied to the dead-letter subject.")

	f.RequestsExpiredUnread = b.counter("hintstream_requests_expired_unread_total", "Request events that aged out of LLM_REQUESTS before any member handled them (the durable's ack floor behind the stream's first sequence; at most, counted when a member attaches).")
	f.ResponsesExpiredUnread = b.counter("hintstream_responses_expired_unread_total", "Response events that aged out of LLM_RESPONSES before any member handled them (the durable's ack floor behind the stream's first sequence; at most, counted when a member attaches).")

	f.ResponsesReceived = b.counter("hintstream_responses_received_total", "Response events delivered by the LLM_RESPONSES consumer, counted on each delivery before decoding.")
	f.ResponsesNoPin = b.counter("hintstream_responses_no_pin_total", "Response events acked without a pin: not a tool call, or pins do not apply to them.")
	f.ResponsesRetried = b.counter("hintstream_responses_retried_total", "Tool-call responses nak'ed for a retry because their request was not indexed yet.")
	f.ResponsesMalformed = b.vec("hintstream_responses_malformed_total", "reason", "Response events dead-lettered and terminated because they can never be processed, by decode reason.", append([]string{ReasonMalformed}, schemas.CommonDecodeReasons...)...)
	f.ResponsesAckErrors = b.counter("hintstream_responses_ack_errors_total", "Acks of response events that JetStream did not confirm (the event will come back).")
	f.ResponsesConsumerRecreated = b.counter("hintstream_responses_consumer_recreated_total", "Times the durable responses consumer was found deleted and created again.")
	f.ResponsesMaxDeliveries = b.counter("hintstream_responses_max_deliveries_total", "Response events that ran out of deliveries and were copied to the dead-letter subject.")

	f.HintsPrefetchQueued = b.counter("hintstream_hints_prefetch_queued_total", "Prefetch hints handed to the sender's queue, one per wake-up decided.")
	f.HintsPrefetchSkipped = b.vec("hintstream_hints_prefetch_skipped_total", "reason", "Wake-ups and routed requests given no prefetch hint, by reason: expired (older than --prefetch-ttl), no_worker (no candidate), encode, unknown_worker (the router's worker is not registered), hashes_keyed and hashes_unsalted (sequence hashes that cannot be the workers', docs/dynamo.md), no_pages (no worker reported a block of a prompt known by hashes).", prefetchSkips...)
	f.HintsPrefetchDropped = b.vec("hintstream_hints_prefetch_dropped_total", "reason", "Prefetch hints the sender refused to queue, by reason.", dropReasons...)
	f.HintsPinQueued = b.counter("hintstream_hints_pin_queued_total", "Tool-call pin hints handed to the sender's queue.")
	f.HintsPinSkipped = b.vec("hintstream_hints_pin_skipped_total", "reason", "Tool-call responses given no pin hint, by reason.", pinSkips...)
	f.HintsPinDropped = b.vec("hintstream_hints_pin_dropped_total", "reason", "Pin hints the sender refused to queue, by reason.", dropReasons...)
	f.HintsRenewQueued = b.counter("hintstream_hints_renew_queued_total", "Pin renewals handed to the sender's queue, one per renewal of a held pin.")
	f.HintsRenewDropped = b.vec("hintstream_hints_renew_dropped_total", "reason", "Pin renewals the sender refused to queue, by reason.", dropReasons...)
	f.HintsReleaseQueued = b.counter("hintstream_hints_release_queued_total", "Pin releases handed to the sender's queue, sent when the session's next request arrives.")
	f.HintsReleaseDropped = b.vec("hintstream_hints_release_dropped_total", "reason", "Pin releases the sender refused to queue, by reason.", dropReasons...)
	f.HintsRetainQueued = b.counter("hintstream_hints_retain_queued_total", "hintstream.retain hints to the worker that served a tool call (--retain-on-worker), handed to the sender's queue.")
	f.HintsRetainDropped = b.vec("hintstream_hints_retain_dropped_total", "reason", "hintstream.retain hints not queued, by reason.", append(slices.Clone(dropReasons), "encode", "no_endpoint")...)

	f.LMCachePins = newLMCachePins(b)

	f.PinsRequestIndexFull = b.counter("hintstream_pins_request_index_full_total", "Requests not recorded for a later pin because the request index (KV bucket) was full.")
	f.PinsSlotsFull = b.counter("hintstream_pins_slots_full_total", "Pins not recorded in the slot bucket because it was full.")
	f.PinsExpectedFrom = b.vec("hintstream_pins_expected_from_total", "source", "Pins by where their expected tool time came from, counted as each pin is decided.",
		tooltime.Default.String(), tooltime.Learned.String(), tooltime.AnyTool.String(), tooltime.Provisional.String())
	f.PinsRenewalEnded = b.counter("hintstream_pins_renewal_ended_total", "Pins no longer renewed because their tool call outlasted the renewal cap (--pin-renew-max).")
	f.PinsRenewalErrors = b.counter("hintstream_pins_renewal_errors_total", "Pin renewals not recorded in the slot bucket (tried again shortly).")
	f.PinsRenewalSkipped = b.vec("hintstream_pins_renewal_skipped_total", "reason", "Pin renewals given up, by reason (budget: the pin expired before a renewal pass could reach it).", "budget")
	f.PinsBudgetReleased = b.counter("hintstream_pins_budget_released_total", "Pins released before their time because the member's live pins passed --pin-budget-tokens: those whose sessions were expected back last (docs/retention.md).")
	f.PinsCut = b.counter("hintstream_pins_cut_total", "Pins cut to their leading pages because their keys passed the key or byte cap of one pin (docs/limits.md).")
	f.ToolDiscarded = b.counter("hintstream_tooltime_discarded_total", "Observed tool times the learner discarded as implausible.")
	f.ToolObserved = b.toolVec("hintstream_tooltime_observed_total", "Tool times observed (request after a tool call), by tool; the top --metrics-top-tools tools by this count are exported, the rest as other.")
	f.ToolExpected = b.toolGauge("hintstream_tooltime_expected_seconds", "The learned expected time of a tool call, by tool, updated on each observation.")

	f.AffinityWritten = b.counter("hintstream_affinity_written_total", "Session affinity records written to the affinity bucket.")
	f.AffinityDropped = b.vec("hintstream_affinity_dropped_total", "reason", "Session affinity records not written, by reason: queue_full, closed (shutting down), error.", "queue_full", "closed", "error")
	f.AffinitySkipped = b.vec("hintstream_affinity_skipped_total", "reason", "Decisions with no affinity record to write, by reason (no_session: the request had none).", "no_session")

	f.KVEventsReceived = b.counter("hintstream_kv_events_received_total", "KV event messages delivered by the KV_EVENTS consumer, counted before decoding.")
	f.KVEventsApplyErrors = b.counter("hintstream_kv_events_apply_errors_total", "KV event messages that failed to apply for a reason other than their content.")
	f.KVEventsDeadLetterErrors = b.counter("hintstream_kv_events_dead_letter_errors_total", "Malformed KV event messages whose copy to the dead-letter subject failed.")
	f.KVEventsMalformed = b.vec("hintstream_kv_events_malformed_total", "reason", "KV event messages dead-lettered and skipped because they can never be applied, by reason.", append([]string{"invalid event", ReasonUnknownWorker, ReasonRankOutOfRange, ReasonWorkerMismatch}, schemas.CommonDecodeReasons...)...)

	f.KVEventsApplied = b.vec("hintstream_kv_events_applied_total", "kind", "KV events applied to the index, by kind.",
		schemas.KindStored.String(), schemas.KindRemoved.String(), schemas.KindCleared.String())
	f.KVEventsDropped = b.vec("hintstream_kv_events_dropped_total", "reason", "KV events not indexed, by reason: unknown worker (dropped from the holding area, their worker never registered), dp rank out of range (a rank their worker's record does not list).", ReasonUnknownWorker, ReasonRankOutOfRange)
	f.KVEventsEventPlaneIgnored = b.vec("hintstream_kv_events_event_plane_ignored_total", "reason", "Well-formed event-plane frames with nothing to index, by reason.",
		eventplane.IgnoreResidencyDomain, eventplane.IgnoreTier)
	f.KVEventsHeld = b.counter("hintstream_kv_events_held_total", "KV events held because their worker is not registered yet.")
	f.KVEventsPromoted = b.counter("hintstream_kv_events_promoted_total", "Held KV events applied once their worker registered.")
	f.KVEventsUnknownParent = b.counter("hintstream_kv_events_unknown_parent_total", "Stored KV events dropped because their parent block is not indexed.")
	f.KVEventsUnknownTier = b.counter("hintstream_kv_events_unknown_tier_total", "KV events ignored for a storage tier this version does not rank.")
	f.KVEventsEngineRestarts = b.counter("hintstream_kv_events_engine_restarts_total", "Engine restarts seen (a new epoch header), each clearing that worker's engine tiers.")
	f.KVEventsSkippedModel = b.counter("hintstream_kv_events_skipped_model_total", "KV events skipped because their worker serves a model outside --models.")
	f.KVEventsPrunedWorkers = b.counter("hintstream_kv_events_pruned_workers_total", "Workers removed from the index after leaving the registry.")
	f.KVEventsPurged = b.counter("hintstream_kv_events_purged_total", "KV_EVENTS messages purged after a snapshot covered them.")
	f.LoadReceived = b.counter("hintstream_load_received_total", "Load reports delivered by the KV_LOAD consumer, counted before decoding.")
	f.LoadApplyErrors = b.counter("hintstream_load_apply_errors_total", "Load reports that failed to apply for a reason other than their content.")
	f.LoadDeadLetterErrors = b.counter("hintstream_load_dead_letter_errors_total", "Malformed load reports whose copy to the dead-letter subject failed.")
	f.LoadMalformed = b.vec("hintstream_load_malformed_total", "reason", "Load reports dead-lettered and skipped because they can never be applied, by reason.", append([]string{"too many workers reporting load", ReasonWorkerMismatch}, schemas.CommonDecodeReasons...)...)

	f.LoadRefused = b.vec("hintstream_load_refused_total", "reason", "Load reports not kept, by reason: unknown worker (not registered), dp rank out of range (a rank its record does not list). Only registered workers' ranks enter the load table.", ReasonUnknownWorker, ReasonRankOutOfRange)

	f.SnapshotsLoaded = b.counter("hintstream_snapshots_loaded_total", "Index snapshots loaded at start-up.")
	f.SnapshotsSaved = b.counter("hintstream_snapshots_saved_total", "Index snapshots saved, every --snapshot-interval.")
	f.SnapshotsErrors = b.counter("hintstream_snapshots_errors_total", "Index snapshots that failed to save.")
	f.SnapshotsReclaimed = b.counter("hintstream_snapshots_reclaimed_total", "Old or orphaned snapshot objects deleted.")
	f.SnapshotsReclaimedChunks = b.counter("hintstream_snapshots_reclaimed_chunks_total", "Chunk messages of the snapshot objects deleted.")
	f.StreamsRecreated = b.counter("hintstream_streams_recreated_total", "Streams found deleted and created again.")
	f.RegistryInvalidRecords = b.vec("hintstream_registry_invalid_records_total", "reason", "Worker records the registry refused, by reason; each record is counted once.",
		schemas.ReasonBlockSize, schemas.ReasonNoEndpoints, schemas.ReasonTooManyEndpoints, schemas.ReasonCurveKey,
		schemas.ReasonEndpointTooLong, schemas.ReasonInproc, schemas.ReasonIPCNotAllowed, schemas.ReasonBadScheme,
		schemas.ReasonBadHost, schemas.ReasonWildcardHost, schemas.ReasonBadPort,
		registry.ReasonBadKey, registry.ReasonIDMismatch, registry.ReasonMalformed,
		schemas.ReasonLayoutPageSize, schemas.ReasonLayoutSuffixes, schemas.ReasonLayoutKeyLen, registry.ReasonEndpointClaimed)
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

// Summary returns every nonzero value by exposed name, for replay's
// summary and the tests: "hintstream_requests_received_total", a labelled
// family's total under its name and each series under name|label value
// ("hintstream_requests_malformed_total|bad json"), and a seconds gauge in
// milliseconds under its name ending _ms instead
// ("hintstream_tooltime_expected_ms|search").
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
		return Trigger{f.RequestsMalformed, f.RequestsAckErrors, f.RequestsConsumerRecreated, f.RequestsMaxDeliveries, f.RequestsExpiredUnread}
	case "responses":
		return Trigger{f.ResponsesMalformed, f.ResponsesAckErrors, f.ResponsesConsumerRecreated, f.ResponsesMaxDeliveries, f.ResponsesExpiredUnread}
	case "request_trace":
		rt := f.RequestTrace
		return Trigger{rt.Malformed, rt.AckErrors, rt.ConsumerRecreated, rt.MaxDeliveries, rt.ExpiredUnread}
	}
	return f.orphans.trigger
}

// Trigger are a trigger stream's transport counters.
type Trigger struct {
	Malformed                                   *CounterVec
	AckErrors, ConsumerRecreated, MaxDeliveries *Counter
	ExpiredUnread                               *Counter
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

// Hint returns the counters of a hint kind the pin path sends ("pin",
// "renew", "release", "retain" to a worker); another kind gets counters
// that are not exported.
func (f *Families) Hint(kind string) (queued *Counter, dropped *CounterVec) {
	switch kind {
	case "pin":
		return f.HintsPinQueued, f.HintsPinDropped
	case "renew":
		return f.HintsRenewQueued, f.HintsRenewDropped
	case "release":
		return f.HintsReleaseQueued, f.HintsReleaseDropped
	case "retain":
		return f.HintsRetainQueued, f.HintsRetainDropped
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
		trigger: Trigger{b.vec("hintstream_unknown_malformed_total", "reason", "-"), b.counter("hintstream_unknown_ack_errors_total", "-"),
			b.counter("hintstream_unknown_consumer_recreated_total", "-"), b.counter("hintstream_unknown_max_deliveries_total", "-"),
			b.counter("hintstream_unknown_expired_unread_total", "-")},
		state: State{b.counter("hintstream_unknown_received_total", "-"), b.counter("hintstream_unknown_apply_errors_total", "-"),
			b.counter("hintstream_unknown_dead_letter_errors_total", "-"), b.vec("hintstream_unknown_state_malformed_total", "reason", "-")},
		queued:  b.counter("hintstream_unknown_queued_total", "-"),
		dropped: b.vec("hintstream_unknown_dropped_total", "reason", "-"),
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

// checkName refuses a family name that is not hintstream_…, with
// _total on counters: names are literals at the definition, so grep
// finds them, and a slip is caught by any test that calls New.
func checkName(name string, counter bool) string {
	if !strings.HasPrefix(name, ns) || counter != strings.HasSuffix(name, "_total") {
		panic("metrics: bad family name " + name)
	}
	return name
}

func (b builder) counter(name, help string) *Counter {
	c := &Counter{name: checkName(name, true),
		c: prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})}
	b.f.reg.MustRegister(c.c)
	b.f.all = append(b.f.all, c)
	return c
}

func (b builder) newVec(name, label, help string, known []string) *CounterVec {
	v := &CounterVec{name: checkName(name, true), help: help, label: label, known: known,
		v: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})}
	for _, lv := range known {
		v.v.WithLabelValues(lv)
	}
	b.f.reg.MustRegister(v.v)
	return v
}

func (b builder) vec(name, label, help string, known ...string) *CounterVec {
	v := b.newVec(name, label, help, known)
	b.f.all = append(b.f.all, v)
	return v
}

// toolVec is labelled tool, with tool="other" (tooltime.Other) at 0.
func (b builder) toolVec(name, help string) *CounterVec {
	v := b.newVec(name, "tool", help, []string{tooltime.Other})
	b.f.tool = append(b.f.tool, v)
	return v
}

// toolGauge is labelled tool; its series appear as tools are learned (a
// 0 s expected time would be a false reading).
func (b builder) toolGauge(name, help string) *GaugeVec {
	g := &GaugeVec{name: checkName(name, false), help: help, label: "tool",
		v: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"tool"})}
	b.f.reg.MustRegister(g.v)
	b.f.tool = append(b.f.tool, g)
	return g
}

// Receiver are the counters of a hint receiver (package receiver, the
// sink command), on a registry of their own.
type Receiver struct {
	set

	Received, Invalid, Duplicate, Expired, UnknownAction *Counter
	OtherWorker                                          *Counter
	Delivered                                            *CounterVec
	Stale                                                *Counter
	LegacyAction                                         *Counter
}

// NewReceiver returns a receiver's counters at 0.
func NewReceiver() *Receiver {
	r := &Receiver{set: newSet()}
	b := builder{&r.set}
	r.Received = b.counter("hintstream_receiver_received_total", "Hint messages the receiver read, before decoding.")
	r.Invalid = b.counter("hintstream_receiver_invalid_total", "Hint messages that did not decode or validate, dropped.")
	r.Duplicate = b.counter("hintstream_receiver_duplicate_total", "Hint messages dropped as a repeat of a message id seen within the dedup window.")
	r.Expired = b.counter("hintstream_receiver_expired_total", "Prefetch actions dropped because they expired before they arrived.")
	r.UnknownAction = b.counter("hintstream_receiver_unknown_action_total", "Actions of a type the receiver does not handle, skipped.")
	r.OtherWorker = b.counter("hintstream_receiver_other_worker_total", "Prefetch actions dropped because their worker_id names another worker than the receiver's.")
	r.Stale = b.counter("hintstream_receiver_stale_total", "Pin actions dropped because their revision was not above the last one applied to their slot (docs/wire.md).")
	r.LegacyAction = b.counter("hintstream_receiver_legacy_action_total", "Actions under a retired name (kv.retain, now hintstream.retain), acted on as the new name; accepted for one release.")
	r.Delivered = b.vec("hintstream_receiver_delivered_total", "reason", "Actions handed to the handler, by action type.", actions.ActionPrefetch, actions.ActionPin)
	return r
}
