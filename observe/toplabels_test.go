package observe

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hintstream/hintstream/observe/metrics"
)

// TestTopToolsBoundSeries: 5,000 tool names (as many as a learner could
// ever hand over, and more) leave TopTools series plus "other" and ""; the
// counts of the tools left out add up in "other", and their gauges go.
func TestTopToolsBoundSeries(t *testing.T) {
	c := metrics.New()
	var total uint64
	for i := range 5000 {
		tool := fmt.Sprintf("tool-%04d", i)
		n := uint64(1)
		if i%1000 == 7 { // five heavy hitters, spread over the names
			n = 100 + uint64(i/1000)
		}
		c.ToolObserved.Add(tool, n)
		c.ToolExpected.Set(tool, 1)
		total += n
	}
	c.ToolObserved.Add("", 3)
	c.ToolObserved.Add("other", 11)
	total += 14
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(Sources{Counters: c, TopTools: 5}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() != "tool" {
					continue
				}
				if tools[mf.GetName()] == nil {
					tools[mf.GetName()] = map[string]float64{}
				}
				v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
				tools[mf.GetName()][lp.GetValue()] = v
			}
		}
	}
	obs := tools["hintstream_tooltime_observed_total"]
	if len(obs) != 7 {
		t.Fatalf("%d observed series, want 5 top + other + none: %v", len(obs), obs)
	}
	var sum float64
	for i := range 5 {
		tool := fmt.Sprintf("tool-%04d", i*1000+7)
		if obs[tool] != float64(100+i) {
			t.Errorf("top tool %s = %v, want %d", tool, obs[tool], 100+i)
		}
	}
	for _, v := range obs {
		sum += v
	}
	if sum != float64(total) || obs[""] != 3 || obs["other"] != float64(4995+11) {
		t.Fatalf("observed sum %v (want %d), none %v, other %v", sum, total, obs[""], obs["other"])
	}
	if exp := tools["hintstream_tooltime_expected_seconds"]; len(exp) != 5 {
		t.Fatalf("expected-time gauges %v, want the 5 top tools only", exp)
	}
	// The whole exposition stays small: the 5,000 tools add at most 20
	// series to a fresh instance's (whose families all exist at 0).
	fresh := prometheus.NewPedanticRegistry()
	fresh.MustRegister(newCollector(Sources{Counters: metrics.New(), TopTools: 5}))
	base, err := testutil.GatherAndCount(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n-base > 20 {
		t.Fatalf("%d series over a fresh instance's %d (%v)", n-base, base, err)
	}
}
