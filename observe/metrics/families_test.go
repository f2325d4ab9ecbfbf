package metrics

import (
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// gather returns a fresh set's families by name.
func gather(t *testing.T, s *set) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestEveryFamilyAtZero: a fresh set lists every family (but the learned
// tool-time gauge, which has no series before a tool is learned), each
// with HELP text saying more than its name, every known label at 0.
func TestEveryFamilyAtZero(t *testing.T) {
	f := New()
	got := gather(t, &f.set)
	for _, name := range f.Names() {
		mf := got[name]
		if name == f.ToolExpected.Name() {
			if mf != nil {
				t.Errorf("%s has series before any tool was learned", name)
			}
			continue
		}
		if mf == nil {
			t.Errorf("%s missing from a fresh registry", name)
			continue
		}
		if h := mf.GetHelp(); len(h) < 30 || strings.Contains(h, "hintstream counter") {
			t.Errorf("%s HELP %q", name, h)
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s%v = %v at start", name, m.GetLabel(), v)
			}
		}
	}
	if len(got) != len(f.Names())-1 {
		t.Errorf("%d families gathered, %d defined", len(got), len(f.Names()))
	}
	// The names dashboards, e2e tests and docs use, with their label names.
	for name, label := range map[string]string{
		"hintstream_requests_received_total":        "",
		"hintstream_requests_malformed_total":       "reason",
		"hintstream_responses_malformed_total":      "reason",
		"hintstream_kv_events_malformed_total":      "reason",
		"hintstream_load_malformed_total":           "reason",
		"hintstream_hints_prefetch_skipped_total":   "reason",
		"hintstream_hints_prefetch_dropped_total":   "reason",
		"hintstream_hints_pin_dropped_total":        "reason",
		"hintstream_hints_renew_queued_total":       "",
		"hintstream_kv_events_applied_total":        "kind",
		"hintstream_pins_expected_from_total":       "source",
		"hintstream_tooltime_observed_total":        "tool",
		"hintstream_registry_invalid_records_total": "reason",
		"hintstream_requests_wakeup_total":          "",
	} {
		mf := got[name]
		if mf == nil {
			t.Errorf("%s missing", name)
			continue
		}
		for _, m := range mf.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			if want := strings.Fields(label); !slices.Equal(names, want) {
				t.Errorf("%s labels %v, want %v", name, names, want)
			}
		}
	}
	if n := len(got["hintstream_hints_prefetch_skipped_total"].GetMetric()); n != len(prefetchSkips) {
		t.Errorf("prefetch skipped has %d series at start, want %v", n, prefetchSkips)
	}
}

func TestCountersReadBack(t *testing.T) {
	f := New()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				f.HintsPrefetchDropped.Inc("expired")
				f.RequestsReceived.Inc()
			}
		}()
	}
	wg.Wait()
	if f.RequestsReceived.Value() != 8000 || f.HintsPrefetchDropped.Value("expired") != 8000 ||
		f.HintsPrefetchDropped.Total() != 8000 || f.HintsPrefetchDropped.Value("closed") != 0 {
		t.Fatalf("counts: %v", f.Summary())
	}
	f.ToolExpected.Set("search", 9)
	f.ToolExpected.Set("search", 4)
	f.KVEventsApplied.With("stored").Add(2)
	f.RequestsMalformed.Inc("\xff") // replaced, not a panic
	sum := f.Summary()
	for k, want := range map[string]uint64{
		"hintstream_requests_received_total": 8000, "hintstream_hints_prefetch_dropped_total": 8000, "hintstream_hints_prefetch_dropped_total|expired": 8000,
		"hintstream_tooltime_expected_ms|search": 4000, "hintstream_kv_events_applied_total|stored": 2, "hintstream_requests_malformed_total|\uFFFD": 1,
	} {
		if sum[k] != want {
			t.Errorf("summary %s = %d, want %d", k, sum[k], want)
		}
	}
	if _, ok := sum["hintstream_hints_prefetch_dropped_total|closed"]; ok {
		t.Error("summary lists a zero series")
	}
	if f.RequestsMalformed.Value("never") != 0 || f.HintsPrefetchDropped.Value("never") != 0 {
		t.Error("unknown series not zero")
	}
	if _, ok := f.RequestsMalformed.Values()["never"]; ok {
		t.Error("reading a series created it")
	}
}

func TestKindsAndOrphans(t *testing.T) {
	f := New()
	f.Trigger("requests").AckErrors.Inc()
	f.State("load").Malformed.Inc("x")
	q, d := f.Hint("renew")
	q.Inc()
	d.Inc("expired")
	if f.RequestsAckErrors.Value() != 1 || f.LoadMalformed.Value("x") != 1 || f.HintsRenewQueued.Value() != 1 ||
		f.HintsRenewDropped.Value("expired") != 1 {
		t.Fatalf("kinds did not reach their fields: %v", f.Summary())
	}
	// An unknown kind counts nowhere exported, and does not panic.
	f.Trigger("nope").AckErrors.Inc()
	f.State("nope").Received.Inc()
	q, _ = f.Hint("nope")
	q.Inc()
	for name := range gather(t, &f.set) {
		if strings.Contains(name, "unknown") && !strings.Contains(name, "kv_events_unknown") {
			t.Errorf("orphan family %s exported", name)
		}
	}
}

func TestReceiverFamilies(t *testing.T) {
	r := NewReceiver()
	r.Delivered.Inc("kv.pin")
	got := gather(t, &r.set)
	if len(got) != 9 || got["hintstream_receiver_delivered_total"] == nil || got["hintstream_receiver_stale_total"] == nil || got["hintstream_receiver_other_worker_total"] == nil ||
		got["hintstream_receiver_legacy_action_total"] == nil {
		t.Fatalf("receiver families %v", got)
	}
	if r.Summary()["hintstream_receiver_delivered_total|kv.pin"] != 1 {
		t.Errorf("summary %v", r.Summary())
	}
}
