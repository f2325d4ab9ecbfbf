package observe

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

const (
	latencyName = ns + "hint_latency_seconds"
	latencyHelp = "Time from enqueuing a hint to ZeroMQ accepting it."
)

// latencyBuckets are the upper bounds, in seconds, of Histogram's buckets:
// 100µs to 5s.
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// Histogram counts hint send latencies per endpoint in fixed buckets
// (100µs to 5s), exported as hintstream_hint_latency_seconds when set in
// Sources.Latency. It is safe for concurrent use. The zero value is ready
// to use.
type Histogram struct {
	init sync.Once
	vec  *prometheus.HistogramVec
	desc *prometheus.Desc

	mu sync.Mutex
	// departed sums the forgotten endpoints' series. client_golang cannot
	// add one histogram into another, so it is exported as a constant
	// histogram beside the live ones.
	departed *dto.Histogram
}

func (h *Histogram) series() *prometheus.HistogramVec {
	h.init.Do(func() {
		h.vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: latencyName, Help: latencyHelp, Buckets: latencyBuckets,
		}, []string{"endpoint"})
		h.desc = prometheus.NewDesc(latencyName, latencyHelp, []string{"endpoint"}, nil)
	})
	return h.vec
}

// Observe records one latency for endpoint. A negative d counts as 0.
// The endpoint goes through label: WithLabelValues panics on invalid
// UTF-8.
func (h *Histogram) Observe(endpoint string, d time.Duration) {
	h.series().WithLabelValues(label(endpoint)[0]).Observe(max(d, 0).Seconds())
}

func (h *Histogram) collect(ch chan<- prometheus.Metric) {
	h.series().Collect(ch)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.departed == nil {
		return
	}
	buckets := make(map[float64]uint64, len(h.departed.Bucket))
	for _, b := range h.departed.Bucket {
		buckets[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	m, err := prometheus.NewConstHistogram(h.desc, h.departed.GetSampleCount(), h.departed.GetSampleSum(), buckets, zmqsend.DepartedEndpoint)
	send(ch, h.desc, m, err)
}

// Forget drops endpoint's series once its worker has left the registry,
// adding its counts to those of zmqsend.DepartedEndpoint so the
// histogram summed over endpoints never goes down. Endpoints are
// addresses, so none is named zmqsend.DepartedEndpoint.
func (h *Histogram) Forget(endpoint string) {
	if endpoint == zmqsend.DepartedEndpoint {
		return
	}
	vec := h.series()
	endpoint = label(endpoint)[0]
	o, err := vec.GetMetricWithLabelValues(endpoint)
	if err != nil {
		return
	}
	var m dto.Metric
	h.mu.Lock()
	defer h.mu.Unlock()
	// GetMetricWithLabelValues made the series if it was never observed:
	// it is deleted all the same, and adds nothing.
	if !vec.DeleteLabelValues(endpoint) || o.(prometheus.Histogram).Write(&m) != nil || m.GetHistogram().GetSampleCount() == 0 {
		return
	}
	old := m.GetHistogram()
	if h.departed == nil {
		h.departed = old
		return
	}
	*h.departed.SampleCount += old.GetSampleCount()
	*h.departed.SampleSum += old.GetSampleSum()
	for i, b := range old.Bucket {
		*h.departed.Bucket[i].CumulativeCount += b.GetCumulativeCount()
	}
}
