package observe

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// Sources are what the collector reads on each scrape. Every field may be
// nil: its families are then absent.
type Sources struct {
	// Counters are the typed families (metrics.New); the tool-labelled
	// ones are bounded to TopTools (toplabels.go).
	Counters  *metrics.Families
	Index     func() index.Stats
	Endpoints func() map[string]zmqsend.EndpointStats
	// Ready answers /readyz; nil means always ready.
	Ready func() bool
	// IndexComplete says whether the index was built from every KV event
	// since the stream began, and if not why: hintstream_index_complete,
	// /readyz's body and GET /v1/index. Nil: always complete.
	IndexComplete func() (complete bool, reason string)
	// Pending maps a consumer's name to its number of pending messages.
	Pending func() map[string]uint64
	// Latency, fed by the caller, gives hintstream_hint_latency_seconds.
	Latency *Histogram

	// The inspection API (/v1/, see inspect.go). A nil source makes its
	// endpoint 404. They are called only while Ready is nil or true (503
	// before), so they may read state set up after Start.

	// Workers lists the registry's records for GET /v1/workers.
	Workers func() []schemas.WorkerRecord
	// Loads gives a (worker, dp rank)'s load in /v1/workers (nil: none).
	Loads func(kvevents.WorkerKey) schemas.ActiveLoad
	// Stale lists the stale pairs, for /v1/workers and /v1/index (nil: none).
	Stale func() []kvevents.WorkerKey
	// Choose answers POST /v1/overlap (routing.Selector.Choose: it must
	// book nothing).
	Choose func(*schemas.RequestEvent) (routing.Candidate, []routing.Candidate, error)
	// ToolTime answers GET /v1/tooltime; ok false (pins off) gives 404.
	ToolTime func() (stats []tooltime.ToolStats, ok bool)
	// Outcomes answers GET /v1/outcomes (the last agent hints and their
	// fate); ok false (agent hints off) gives 404.
	Outcomes func() (v OutcomesView, ok bool)

	// TopTools bounds the tool label values of /metrics (toplabels.go);
	// default DefaultTopTools.
	TopTools int
	// Budget reports the socket budget (budget.go).
	Budget func() zmqsend.BudgetStats
}

const ns = "hintstream_"

type collector struct {
	src Sources

	indexBlocks, indexWorkers, indexStale, indexHashes *prometheus.Desc
	indexCounters                                      []indexCounter

	sent, retried, released, dropped, queueDepth, sendSeconds, sendMax *prometheus.Desc

	pending, ready, complete *prometheus.Desc

	budget budgetDescs
}

type indexCounter struct {
	desc *prometheus.Desc
	get  func(index.Stats) uint64
}

// newCollector returns a Collector of the sources' metrics (see the
// package doc). It is unchecked: the tool label values are known only at
// scrape time, so Describe sends nothing.
func newCollector(s Sources) prometheus.Collector {
	c := &collector{src: s}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ns+name, help, labels, nil)
	}
	c.indexBlocks = d("index_blocks", "(worker, block) pairs indexed, by storage tier.", "tier")
	c.indexWorkers = d("index_workers", "(worker, dp rank) pairs known to the index.")
	c.indexStale = d("index_stale_workers", "(worker, dp rank) pairs with missing KV events.")
	c.indexHashes = d("index_hashes", "Device sequence hashes held, once per 64-worker page.")
	for _, ic := range []struct {
		name, help string
		get        func(index.Stats) uint64
	}{
		{"index_gaps_total", "KV event ids that skipped ahead.", func(s index.Stats) uint64 { return s.Gaps }},
		{"index_out_of_order_total", "KV events older than the newest id seen.", func(s index.Stats) uint64 { return s.OutOfOrder }},
		{"index_unknown_parent_total", "Stored events dropped for an unknown parent.", func(s index.Stats) uint64 { return s.UnknownParent }},
		{"index_unknown_removals_total", "Removed hashes that were not held.", func(s index.Stats) uint64 { return s.UnknownRemovals }},
		{"index_cleared_total", "Cleared events applied.", func(s index.Stats) uint64 { return s.Cleared }},
		{"index_dropped_full_total", "Device blocks not indexed because the index was full.", func(s index.Stats) uint64 { return s.DroppedFull }},
		{"index_unknown_tier_total", "KV events ignored for a storage tier none of Dynamo's.", func(s index.Stats) uint64 { return s.UnknownTier }},
	} {
		c.indexCounters = append(c.indexCounters, indexCounter{d(ic.name, ic.help), ic.get})
	}
	c.sent = d("hints_sent_total", "Hints ZeroMQ accepted, by endpoint.", "endpoint")
	c.retried = d("hints_retried_total", "Hint send attempts repeated, by endpoint.", "endpoint")
	c.released = d("hints_released_early_total", "Hints whose trigger was acked when queued, because their endpoint already held --sender-max-held, by endpoint.", "endpoint")
	c.dropped = d("hints_dropped_total", "Hints dropped by the sender, by endpoint and reason.", "endpoint", "reason")
	c.queueDepth = d("sender_queue_depth", "Hints queued for an endpoint.", "endpoint")
	c.sendSeconds = d("hint_send_seconds", "Time from enqueuing a hint to ZeroMQ accepting it.", "endpoint")
	c.sendMax = d("hint_send_max_seconds", "Longest time from enqueuing a hint to ZeroMQ accepting it.", "endpoint")
	c.pending = d("consumer_pending", "Messages pending for a JetStream consumer.", "consumer")
	c.ready = d("ready", "1 once the instance has caught up and answers /readyz with 200, 0 before.")
	c.complete = d("index_complete", "1 when the index was built from every KV event since the stream began (or the snapshot it loaded), 0 when some were removed before this member read them (/readyz and GET /v1/index say which).")
	c.budget = newBudgetDescs(d)
	return c
}

// Describe sends nothing, which makes the collector unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every source once.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Counters != nil {
		c.collectCounters(ch)
	}
	if c.src.Index != nil {
		st := c.src.Index()
		emit(ch, c.indexBlocks, prometheus.GaugeValue, float64(st.DeviceBlocks), "device")
		emit(ch, c.indexBlocks, prometheus.GaugeValue, float64(st.OtherTierBlocks), "other")
		emit(ch, c.indexWorkers, prometheus.GaugeValue, float64(st.Workers))
		emit(ch, c.indexStale, prometheus.GaugeValue, float64(st.StaleWorkers))
		emit(ch, c.indexHashes, prometheus.GaugeValue, float64(st.Hashes))
		for _, ic := range c.indexCounters {
			emit(ch, ic.desc, prometheus.CounterValue, float64(ic.get(st)))
		}
	}
	if c.src.Endpoints != nil {
		c.collectEndpoints(ch)
	}
	if c.src.Pending != nil {
		for name, n := range c.src.Pending() {
			emit(ch, c.pending, prometheus.GaugeValue, float64(n), name)
		}
	}
	if c.src.Latency != nil {
		c.src.Latency.collect(ch)
	}
	if c.src.Budget != nil {
		c.budget.collect(ch, c.src.Budget())
	}
	if c.src.IndexComplete != nil {
		v := 0.0
		if ok, _ := c.src.IndexComplete(); ok {
			v = 1
		}
		emit(ch, c.complete, prometheus.GaugeValue, v)
	}
	if c.src.Ready != nil {
		v := 0.0
		if c.src.Ready() {
			v = 1
		}
		emit(ch, c.ready, prometheus.GaugeValue, v)
	}
}

// collectEndpoints exports every endpoint's stats, every drop reason at 0
// until it happens. Before the first endpoint, the families exist at 0
// for endpoint="departed" (zmqsend.DepartedEndpoint), which is where a
// forgotten endpoint's counts go anyway.
func (c *collector) collectEndpoints(ch chan<- prometheus.Metric) {
	eps := c.src.Endpoints()
	if len(eps) == 0 {
		eps = map[string]zmqsend.EndpointStats{zmqsend.DepartedEndpoint: {}}
	}
	for ep, st := range eps {
		emit(ch, c.sent, prometheus.CounterValue, float64(st.Sent), ep)
		emit(ch, c.retried, prometheus.CounterValue, float64(st.Retried), ep)
		emit(ch, c.released, prometheus.CounterValue, float64(st.Released), ep)
		for _, reason := range zmqsend.DropReasons() {
			emit(ch, c.dropped, prometheus.CounterValue, float64(st.Dropped[reason]), ep, reason)
		}
		for reason, n := range st.Dropped {
			if !slices.Contains(zmqsend.DropReasons(), reason) {
				emit(ch, c.dropped, prometheus.CounterValue, float64(n), ep, reason)
			}
		}
		emit(ch, c.queueDepth, prometheus.GaugeValue, float64(st.QueueDepth), ep)
		m, err := prometheus.NewConstSummary(c.sendSeconds, st.LatencyCount, st.LatencySum.Seconds(), nil, label(ep)...)
		send(ch, c.sendSeconds, m, err)
		emit(ch, c.sendMax, prometheus.GaugeValue, st.LatencyMax.Seconds(), ep)
	}
}

// family is one tool-labelled family being bounded (toplabels.go).
type family struct {
	desc     *prometheus.Desc
	label    string
	gauge    bool
	labelled map[string]float64
}

// collectCounters sends the typed families, the tool-labelled ones
// bounded to the top tools.
func (c *collector) collectCounters(ch chan<- prometheus.Metric) {
	m := c.src.Counters
	for _, col := range m.Collectors() {
		col.Collect(ch)
	}
	fams := map[string]*family{}
	obs := map[string]float64{}
	for tool, n := range m.ToolObserved.Values() {
		obs[tool] = float64(n)
	}
	fams[m.ToolObserved.Name()] = &family{label: m.ToolObserved.Label(), labelled: obs,
		desc: prometheus.NewDesc(m.ToolObserved.Name(), m.ToolObserved.Help(), []string{m.ToolObserved.Label()}, nil)}
	fams[m.ToolExpected.Name()] = &family{label: m.ToolExpected.Label(), gauge: true, labelled: m.ToolExpected.Values(),
		desc: prometheus.NewDesc(m.ToolExpected.Name(), m.ToolExpected.Help(), []string{m.ToolExpected.Label()}, nil)}
	boundTools(fams, cmp.Or(max(c.src.TopTools, 0), DefaultTopTools))
	for _, f := range fams {
		vt := prometheus.CounterValue
		if f.gauge {
			vt = prometheus.GaugeValue
		}
		for lv, v := range f.labelled {
			emit(ch, f.desc, vt, v, lv)
		}
	}
}

func label(vs ...string) []string {
	for i, v := range vs {
		vs[i] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return vs
}

func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, vt prometheus.ValueType, v float64, lvs ...string) {
	m, err := prometheus.NewConstMetric(d, vt, v, label(lvs...)...)
	send(ch, d, m, err)
}

// send passes an invalid metric on rather than panicking: the registry
// reports it and, with promhttp.ContinueOnError, serves the rest.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, m prometheus.Metric, err error) {
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}
