package observe

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// latencyBuckets are the upper bounds, in seconds, of Histogram's buckets:
// 100µs to 5s.
var latencyBuckets = [...]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// Histogram counts hint send latencies per endpoint in fixed buckets
// (100µs to 5s), exported as hintstream_hint_latency_seconds when set in
// Sources.Latency. It is safe for concurrent use and takes no lock on
// Observe once an endpoint has been seen. The zero value is ready to use.
type Histogram struct {
	m sync.Map // endpoint -> *histData
}

type histData struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64 // the last is +Inf
	sumNs  atomic.Int64
}

// Observe records one latency for endpoint. A negative d counts as 0.
func (h *Histogram) Observe(endpoint string, d time.Duration) {
	v, ok := h.m.Load(endpoint)
	if !ok {
		v, _ = h.m.LoadOrStore(endpoint, new(histData))
	}
	hd := v.(*histData)
	d = max(d, 0)
	// le semantics: the first bucket whose bound is >= the value.
	i := sort.SearchFloat64s(latencyBuckets[:], d.Seconds())
	hd.counts[i].Add(1)
	hd.sumNs.Add(int64(d))
}

func (h *Histogram) collect(ch chan<- prometheus.Metric, desc *prometheus.Desc) {
	h.m.Range(func(k, v any) bool {
		hd := v.(*histData)
		buckets := make(map[float64]uint64, len(latencyBuckets))
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += hd.counts[i].Load()
			buckets[ub] = cum
		}
		// The count is summed from the buckets, so that it is never below
		// the last bucket even while Observe races this scrape.
		cum += hd.counts[len(latencyBuckets)].Load()
		sum := time.Duration(hd.sumNs.Load()).Seconds()
		m, err := prometheus.NewConstHistogram(desc, cum, sum, buckets, label(k.(string))...)
		send(ch, desc, m, err)
		return true
	})
}

// Forget drops endpoint's series once its worker has left the registry,
// adding its counts to those of zmqsend.DepartedEndpoint so the
// histogram summed over endpoints never goes down.
func (h *Histogram) Forget(endpoint string) {
	if endpoint == zmqsend.DepartedEndpoint {
		return
	}
	v, ok := h.m.LoadAndDelete(endpoint)
	if !ok {
		return
	}
	old := v.(*histData)
	d, _ := h.m.LoadOrStore(zmqsend.DepartedEndpoint, new(histData))
	dep := d.(*histData)
	for i := range old.counts {
		dep.counts[i].Add(old.counts[i].Load())
	}
	dep.sumNs.Add(old.sumNs.Load())
}
