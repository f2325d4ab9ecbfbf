package observe

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// gatherLatency returns the histogram's series by endpoint, buckets as
// upper bound → cumulative count.
func gatherLatency(t *testing.T, h *Histogram) map[string]*dto.Histogram {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(Sources{Latency: h}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Histogram{}
	for _, mf := range fams {
		if mf.GetName() != "hintstream_hint_latency_seconds" {
			continue
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM || mf.GetHelp() != latencyHelp {
			t.Fatalf("family %v %q", mf.GetType(), mf.GetHelp())
		}
		for _, m := range mf.Metric {
			if len(m.Label) != 1 || m.Label[0].GetName() != "endpoint" {
				t.Fatalf("labels %v", m.Label)
			}
			out[m.Label[0].GetValue()] = m.GetHistogram()
		}
	}
	return out
}

func cumulative(h *dto.Histogram) map[float64]uint64 {
	cum := map[float64]uint64{}
	for _, b := range h.Bucket {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return cum
}

func TestHistogramBucketsAndForget(t *testing.T) {
	var h Histogram
	const a, b = "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"
	h.Observe(a, -time.Second) // counts as 0
	h.Observe(a, 100*time.Microsecond)
	h.Observe(a, 101*time.Microsecond)
	h.Observe(b, 10*time.Second)
	h.Observe("bad\xff", time.Millisecond)

	got := gatherLatency(t, &h)
	if len(got) != 3 || got["bad\uFFFD"].GetSampleCount() != 1 {
		t.Fatalf("series %v", got)
	}
	ca := cumulative(got[a])
	if len(ca) != len(latencyBuckets) || ca[0.0001] != 2 || ca[0.00025] != 3 || ca[5] != 3 || got[a].GetSampleCount() != 3 {
		t.Errorf("endpoint a buckets %v count %d", ca, got[a].GetSampleCount())
	}
	if cb := cumulative(got[b]); cb[5] != 0 || got[b].GetSampleCount() != 1 || got[b].GetSampleSum() != 10 {
		t.Errorf("endpoint b beyond the last bound: buckets %v count %d", cb, got[b].GetSampleCount())
	}

	h.Forget("tcp://127.0.0.1:3") // never seen: no departed series
	if _, ok := gatherLatency(t, &h)[zmqsend.DepartedEndpoint]; ok {
		t.Fatal("forgetting an unseen endpoint made a departed series")
	}

	h.Forget(a)
	got = gatherLatency(t, &h)
	dep := got[zmqsend.DepartedEndpoint]
	if _, ok := got[a]; ok || dep == nil {
		t.Fatalf("after Forget(a): %v", got)
	}
	if cd := cumulative(dep); cd[0.0001] != 2 || cd[5] != 3 || dep.GetSampleCount() != 3 || math.Abs(dep.GetSampleSum()-0.000201) > 1e-9 {
		t.Errorf("departed after a: buckets %v count %d sum %v", cd, dep.GetSampleCount(), dep.GetSampleSum())
	}

	// A second departure adds up; the departed series itself is kept.
	h.Forget(b)
	h.Forget(zmqsend.DepartedEndpoint)
	dep = gatherLatency(t, &h)[zmqsend.DepartedEndpoint]
	if cd := cumulative(dep); cd[0.0001] != 2 || cd[5] != 3 || dep.GetSampleCount() != 4 || math.Abs(dep.GetSampleSum()-10.000201) > 1e-9 {
		t.Errorf("departed after b: buckets %v count %d sum %v", cd, dep.GetSampleCount(), dep.GetSampleSum())
	}

	// An endpoint that comes back starts a fresh series.
	h.Observe(a, time.Millisecond)
	if got := gatherLatency(t, &h); got[a].GetSampleCount() != 1 || got[zmqsend.DepartedEndpoint].GetSampleCount() != 4 {
		t.Errorf("after a's return: a %d departed %d", got[a].GetSampleCount(), got[zmqsend.DepartedEndpoint].GetSampleCount())
	}
}

// TestHistogramConcurrent: Observe, Forget and scrapes race (run it with
// -race), and the scrapes stay consistent (the pedantic registry checks
// each one).
func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	const n = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			h.Observe("tcp://127.0.0.1:1", time.Duration(i)*time.Microsecond)
		}
	}()
	for range 50 {
		h.Forget("tcp://127.0.0.1:1")
		gatherLatency(t, &h)
	}
	<-done
	var total uint64
	for _, s := range gatherLatency(t, &h) {
		total += s.GetSampleCount()
	}
	// An Observe holding a series that Forget has just read and deleted
	// is lost, so the total may be short, but never over.
	if total > n || total == 0 {
		t.Fatalf("total %d of %d", total, n)
	}
}
