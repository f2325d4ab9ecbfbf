package observe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hintstream/hintstream/observe/metrics"
)

type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("go.mod not found above the package")
		}
		dir = up
	}
}

var metricName = regexp.MustCompile(`\bhintstream_[a-zA-Z0-9_]+`)

// TestDashboardMetricsExist checks that every metric the Grafana
// dashboard queries is defined: a typed family of package metrics, or
// one the collector emits from populated sources.
func TestDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "grafana", "hintstream.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d", d.SchemaVersion)
	}
	hasDS := false
	var exprs []string
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Name == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
		if q, err := json.Marshal(v.Query); err == nil {
			exprs = append(exprs, string(q))
		}
	}
	if !hasDS {
		t.Error("no Prometheus datasource variable named datasource")
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(newFixture(t).src))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	fams0 := metrics.New()
	metrics.NewAgent(fams0) // run --agents
	for _, name := range fams0.Names() {
		emitted[name] = true
	}
	for _, mf := range fams {
		emitted[mf.GetName()] = true
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			emitted[mf.GetName()+"_bucket"] = true
			fallthrough
		case dto.MetricType_SUMMARY:
			emitted[mf.GetName()+"_sum"] = true
			emitted[mf.GetName()+"_count"] = true
		}
	}

	if len(d.Panels) < 10 {
		t.Errorf("%d panels, want at least 10", len(d.Panels))
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q datasource %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q names no hintstream metric", p.Title, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			used[n] = true
			if !emitted[n] {
				t.Errorf("dashboard queries %s, which the collector does not emit (in %s)", n, e)
			}
		}
	}
	for _, n := range []string{"hintstream_hints_sent_total", "hintstream_hints_dropped_total", "hintstream_sender_queue_depth",
		"hintstream_hint_send_seconds_sum", "hintstream_requests_malformed_total", "hintstream_kv_events_applied_total",
		"hintstream_index_blocks", "hintstream_index_workers", "hintstream_index_stale_workers",
		"hintstream_consumer_pending", "hintstream_tooltime_expected_seconds",
		// pins, renewals, dead letters, readiness
		"hintstream_hints_pin_queued_total", "hintstream_hints_renew_queued_total", "hintstream_pins_renewal_ended_total",
		"hintstream_load_malformed_total", "hintstream_requests_max_deliveries_total", "hintstream_ready"} {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
	if t.Failed() {
		t.Logf("emitted: %s", strings.Join(sortedKeys(emitted), " "))
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
