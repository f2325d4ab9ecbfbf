package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// RetentionGroup counts the work of one planner across a consumer group:
// who leads, and the observations members relay to it.
type RetentionGroup struct {
	// Leader is 1 while this member holds the planner lock.
	Leader *Gauge
	// Takeovers counts the times this member took the lock.
	Takeovers *Counter
	// Forwarded counts observations this member published for the group;
	// Received those it applied from other members' batches.
	Forwarded, Received *Counter
	// Dropped counts observations lost on the way, by reason: queue_full
	// (the publish queue was full), publish (the connection refused the
	// batch), slow_consumer (the subscription's pending limit dropped
	// batches; counted in batches, not observations), malformed (a batch
	// that did not decode, counted in batches).
	Dropped *CounterVec
	// ShadowPlans counts plans made while not leading: they keep the
	// estimates current and are not sent.
	ShadowPlans *Counter
}

func newRetentionGroup(b builder) RetentionGroup {
	return RetentionGroup{
		Leader:      b.gauge("hintstream_retention_leader", "1 while this member holds the retention planner lock and alone sends the group's retention pins, else 0."),
		Takeovers:   b.counter("hintstream_retention_takeovers_total", "Times this member took the retention planner lock."),
		Forwarded:   b.counter("hintstream_retention_observations_forwarded_total", "Planner observations (prompts' pages, tool calls) this member published for the group's planner."),
		Received:    b.counter("hintstream_retention_observations_received_total", "Planner observations this member applied from other members."),
		Dropped:     b.vec("hintstream_retention_observations_dropped_total", "reason", "Planner observations lost between members, by reason (slow_consumer and malformed count batches).", "queue_full", "publish", "slow_consumer", "malformed"),
		ShadowPlans: b.counter("hintstream_retention_shadow_plans_total", "Retention plans made while another member leads: they keep this member's estimates current and are not sent."),
	}
}

// Gauge is an unlabelled gauge.
type Gauge struct {
	g    prometheus.Gauge
	name string
}

func (b builder) gauge(name, help string) *Gauge {
	g := &Gauge{name: checkName(name, false), g: prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})}
	b.f.reg.MustRegister(g.g)
	b.f.all = append(b.f.all, g)
	return g
}

// Set stores v.
func (g *Gauge) Set(v float64) { g.g.Set(v) }

// Value returns the value.
func (g *Gauge) Value() float64 {
	var m dto.Metric
	if g.g.Write(&m) != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}

// Name returns the exposed metric name.
func (g *Gauge) Name() string { return g.name }

// Describe and Collect make a Gauge a prometheus.Collector.
func (g *Gauge) Describe(ch chan<- *prometheus.Desc) { g.g.Describe(ch) }

// Collect sends the gauge's series.
func (g *Gauge) Collect(ch chan<- prometheus.Metric) { g.g.Collect(ch) }

func (g *Gauge) summarize(out map[string]uint64) {
	if v := g.Value(); v > 0 {
		out[g.name] = uint64(v + 0.5)
	}
}
