package metrics

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// family is what every typed family offers besides prometheus.Collector:
// its name and its nonzero values for the shutdown summary.
type family interface {
	prometheus.Collector
	// Name is the exposed metric name, e.g. hintstream_requests_received_total.
	Name() string
	// summarize adds the nonzero values under the family's key.
	summarize(out map[string]uint64)
}

// Counter is an unlabelled monotonic counter.
type Counter struct {
	c    prometheus.Counter
	name string
}

// Inc adds one.
func (c *Counter) Inc() { c.c.Inc() }

// Add adds n.
func (c *Counter) Add(n uint64) { c.c.Add(float64(n)) }

// Value returns the count so far.
func (c *Counter) Value() uint64 {
	var m dto.Metric
	if c.c.Write(&m) != nil {
		return 0
	}
	return uint64(m.GetCounter().GetValue())
}

// Name returns the exposed metric name.
func (c *Counter) Name() string { return c.name }

// Describe and Collect make a Counter a prometheus.Collector.
func (c *Counter) Describe(ch chan<- *prometheus.Desc) { c.c.Describe(ch) }

// Collect sends the counter's series.
func (c *Counter) Collect(ch chan<- prometheus.Metric) { c.c.Collect(ch) }

func (c *Counter) summarize(out map[string]uint64) {
	if v := c.Value(); v > 0 {
		out[c.name] = v
	}
}

// CounterVec is a counter family with one label. Its known label values
// exist at 0 from construction; others appear on first use. Label values
// that are not valid UTF-8 have the bad bytes replaced by U+FFFD, so a
// value from input never makes the client library panic.
type CounterVec struct {
	v          *prometheus.CounterVec
	name, help string
	label      string
	known      []string
}

// Inc adds one to the series lv.
func (v *CounterVec) Inc(lv string) { v.v.WithLabelValues(valid(lv)).Inc() }

// Add adds n to the series lv.
func (v *CounterVec) Add(lv string, n uint64) { v.v.WithLabelValues(valid(lv)).Add(float64(n)) }

// With returns the series lv, for a call site that bumps one series
// often and looks it up once.
func (v *CounterVec) With(lv string) *Counter {
	return &Counter{c: v.v.WithLabelValues(valid(lv)), name: v.name + "|" + lv}
}

// Value returns the count of the series lv, 0 when it does not exist (it
// is not created).
func (v *CounterVec) Value(lv string) uint64 { return uint64(v.Values()[valid(lv)]) }

// Values returns every series' count by label value.
func (v *CounterVec) Values() map[string]uint64 {
	out := map[string]uint64{}
	for lv, f := range collectLabelled(v.v) {
		out[lv] = uint64(f)
	}
	return out
}

// Total returns the sum over every series.
func (v *CounterVec) Total() uint64 {
	var n uint64
	for _, c := range v.Values() {
		n += c
	}
	return n
}

// Name returns the exposed metric name; Label the label's name; Help the
// HELP text; Known the label values that exist from construction.
func (v *CounterVec) Name() string    { return v.name }
func (v *CounterVec) Label() string   { return v.label }
func (v *CounterVec) Help() string    { return v.help }
func (v *CounterVec) Known() []string { return slices.Clone(v.known) }

// Describe and Collect make a CounterVec a prometheus.Collector.
func (v *CounterVec) Describe(ch chan<- *prometheus.Desc) { v.v.Describe(ch) }

// Collect sends every series.
func (v *CounterVec) Collect(ch chan<- prometheus.Metric) { v.v.Collect(ch) }

// summarize gives the total under the name and each nonzero series under
// name|label.
func (v *CounterVec) summarize(out map[string]uint64) {
	vals := v.Values()
	var total uint64
	for _, lv := range slices.Sorted(maps.Keys(vals)) {
		if n := vals[lv]; n > 0 {
			out[v.name+"|"+lv] = n
			total += n
		}
	}
	if total > 0 {
		out[v.name] = total
	}
}

// GaugeVec is a gauge family with one label, holding seconds.
type GaugeVec struct {
	v          *prometheus.GaugeVec
	name, help string
	label      string
}

// Set stores seconds as the value of the series lv.
func (g *GaugeVec) Set(lv string, seconds float64) { g.v.WithLabelValues(valid(lv)).Set(seconds) }

// Values returns every series' value by label value.
func (g *GaugeVec) Values() map[string]float64 { return collectLabelled(g.v) }

// Name returns the exposed metric name; Label the label's name; Help
// the HELP text.
func (g *GaugeVec) Name() string  { return g.name }
func (g *GaugeVec) Label() string { return g.label }
func (g *GaugeVec) Help() string  { return g.help }

// Describe and Collect make a GaugeVec a prometheus.Collector.
func (g *GaugeVec) Describe(ch chan<- *prometheus.Desc) { g.v.Describe(ch) }

// Collect sends every series.
func (g *GaugeVec) Collect(ch chan<- prometheus.Metric) { g.v.Collect(ch) }

// summarize gives each series in milliseconds, under the name with _ms
// for _seconds, |label.
func (g *GaugeVec) summarize(out map[string]uint64) {
	key := strings.TrimSuffix(g.name, "_seconds") + "_ms"
	for lv, s := range g.Values() {
		out[key+"|"+lv] = uint64(s*1000 + 0.5)
	}
}

func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// collectLabelled reads a one-label vector's series by label value.
func collectLabelled(c prometheus.Collector) map[string]float64 {
	out := map[string]float64{}
	for _, m := range collect(c) {
		if len(m.GetLabel()) == 1 {
			out[m.GetLabel()[0].GetValue()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil {
			out = append(out, &d)
		}
	}
	return out
}
