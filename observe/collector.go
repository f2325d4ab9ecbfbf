package observe

import (
	"cmp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/tooltime"
)

// Sources are what the collector reads on each scrape. Every field may be
// nil: its families are then absent.
type Sources struct {
	Counters  *metrics.Counters
	Index     func() kvevents.Stats
	Endpoints func() map[string]actions.EndpointStats
	// Ready answers /readyz; nil means always ready.
	Ready func() bool
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

	// TopTools bounds the tool label values of /metrics (toplabels.go);
	// default DefaultTopTools.
	TopTools int
	// Budget reports the socket budget (budget.go).
	Budget func() actions.BudgetStats
}

const ns = "hintstream_"

// gaugeSpec turns a Counters.Set name into a gauge.
type gaugeSpec struct {
	name  string
	scale float64
}

// gauges lists the Counters names written with Set, by sanitised name.
var gauges = map[string]gaugeSpec{
	"tooltime_expected_ms": {ns + "tooltime_expected_seconds", 1e-3},
}

// labelNames gives the label of a labelled counter family by sanitised
// name prefix; "reason" otherwise.
var labelNames = []struct{ prefix, label string }{
	{"tooltime_", "tool"},
	{"kv_events_applied", "kind"},
	{"pins_expected_from", "source"},
}

type collector struct {
	src   Sources
	fixed map[string]bool // fixed family names, which counters may not take

	indexBlocks, indexWorkers, indexStale, indexHashes *prometheus.Desc
	indexCounters                                      []indexCounter

	sent, retried, released, dropped, queueDepth, sendSeconds, sendMax *prometheus.Desc

	pending, latency *prometheus.Desc

	budget budgetDescs
}

type indexCounter struct {
	desc *prometheus.Desc
	get  func(kvevents.Stats) uint64
}

// NewCollector returns a Collector of the sources' metrics (see the
// package doc for the mapping). It is unchecked: the counter families are
// known only at scrape time, so Describe sends nothing.
func NewCollector(s Sources) prometheus.Collector {
	c := &collector{src: s, fixed: map[string]bool{}}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		c.fixed[ns+name] = true
		return prometheus.NewDesc(ns+name, help, labels, nil)
	}
	c.indexBlocks = d("index_blocks", "(worker, block) pairs indexed, by storage tier.", "tier")
	c.indexWorkers = d("index_workers", "(worker, dp rank) pairs known to the index.")
	c.indexStale = d("index_stale_workers", "(worker, dp rank) pairs with missing KV events.")
	c.indexHashes = d("index_hashes", "Device sequence hashes held, once per 64-worker page.")
	for _, ic := range []struct {
		name, help string
		get        func(kvevents.Stats) uint64
	}{
		{"index_gaps_total", "KV event ids that skipped ahead.", func(s kvevents.Stats) uint64 { return s.Gaps }},
		{"index_out_of_order_total", "KV events older than the newest id seen.", func(s kvevents.Stats) uint64 { return s.OutOfOrder }},
		{"index_unknown_parent_total", "Stored events dropped for an unknown parent.", func(s kvevents.Stats) uint64 { return s.UnknownParent }},
		{"index_unknown_removals_total", "Removed hashes that were not held.", func(s kvevents.Stats) uint64 { return s.UnknownRemovals }},
		{"index_cleared_total", "Cleared events applied.", func(s kvevents.Stats) uint64 { return s.Cleared }},
		{"index_dropped_full_total", "Device blocks not indexed because the index was full.", func(s kvevents.Stats) uint64 { return s.DroppedFull }},
		{"index_unknown_tier_total", "KV events ignored for a storage tier none of Dynamo's.", func(s kvevents.Stats) uint64 { return s.UnknownTier }},
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
	c.latency = d("hint_latency_seconds", "Time from enqueuing a hint to ZeroMQ accepting it.", "endpoint")
	c.pending = d("consumer_pending", "Messages pending for a JetStream consumer.", "consumer")
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
		c.src.Latency.collect(ch, c.latency)
	}
	if c.src.Budget != nil {
		c.budget.collect(ch, c.src.Budget())
	}
}

func (c *collector) collectEndpoints(ch chan<- prometheus.Metric) {
	for ep, st := range c.src.Endpoints() {
		emit(ch, c.sent, prometheus.CounterValue, float64(st.Sent), ep)
		emit(ch, c.retried, prometheus.CounterValue, float64(st.Retried), ep)
		emit(ch, c.released, prometheus.CounterValue, float64(st.Released), ep)
		for reason, n := range st.Dropped {
			emit(ch, c.dropped, prometheus.CounterValue, float64(n), ep, reason)
		}
		emit(ch, c.queueDepth, prometheus.GaugeValue, float64(st.QueueDepth), ep)
		m, err := prometheus.NewConstSummary(c.sendSeconds, st.LatencyCount, st.LatencySum.Seconds(), nil, label(ep)...)
		send(ch, c.sendSeconds, m, err)
		emit(ch, c.sendMax, prometheus.GaugeValue, st.LatencyMax.Seconds(), ep)
	}
}

// family gathers the counters that map to one metric name.
type family struct {
	help     string
	label    string
	gauge    bool
	scale    float64
	total    uint64
	hasTotal bool
	labelled map[string]uint64
}

func (c *collector) collectCounters(ch chan<- prometheus.Metric) {
	snap := c.src.Counters.Snapshot("")
	names := make([]string, 0, len(snap))
	for k := range snap {
		names = append(names, k)
	}
	sort.Strings(names) // the first name of a family gives its help text
	fams := map[string]*family{}
	for _, k := range names {
		base, lv, labelled := strings.Cut(k, "|")
		san := sanitize(base)
		if san == "" {
			continue
		}
		f := c.familyOf(fams, base, san)
		if labelled {
			f.labelled[strings.ToValidUTF8(lv, "\uFFFD")] += snap[k]
		} else {
			f.total += snap[k]
			f.hasTotal = true
		}
	}
	boundTools(fams, cmp.Or(max(c.src.TopTools, 0), DefaultTopTools))
	for name, f := range fams {
		vt, scale := prometheus.CounterValue, 1.0
		if f.gauge {
			vt, scale = prometheus.GaugeValue, f.scale
		}
		if len(f.labelled) == 0 {
			emit(ch, prometheus.NewDesc(name, f.help, nil, nil), vt, float64(f.total)*scale)
			continue
		}
		desc := prometheus.NewDesc(name, f.help, []string{f.label}, nil)
		for lv, v := range f.labelled {
			emit(ch, desc, vt, float64(v)*scale, lv)
		}
	}
}

func (c *collector) familyOf(fams map[string]*family, base, san string) *family {
	var name string
	g, isGauge := gauges[san]
	switch {
	case isGauge:
		name = g.name
	case c.fixed[ns+san+"_total"]:
		name = ns + "counters_" + san + "_total"
	default:
		name = ns + san + "_total"
	}
	if f := fams[name]; f != nil {
		return f
	}
	f := &family{label: "reason", labelled: map[string]uint64{}, gauge: isGauge, scale: g.scale}
	f.help = "hintstream counter " + strings.ToValidUTF8(base, "\uFFFD") + "."
	if isGauge {
		f.help = "hintstream gauge " + strings.ToValidUTF8(base, "\uFFFD") + "."
	}
	for _, l := range labelNames {
		if strings.HasPrefix(san, l.prefix) {
			f.label = l.label
			break
		}
	}
	fams[name] = f
	return f
}

// sanitize maps a dotted counter name to a metric name fragment.
func sanitize(s string) string {
	b := []byte(s)
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			b[i] = '_'
		}
	}
	return string(b)
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
