package metrics

import "github.com/prometheus/client_golang/prometheus"

// Label values of the adapter's families (package adapter uses these
// constants, so a reason cannot drift from its series at 0).
const (
	AdapterDropExpired     = "expired"      // past expires_at_ms before the call could start
	AdapterDropQueueFull   = "queue_full"   // every call slot busy and the queue full: the socket is never blocked
	AdapterDropUnsupported = "unsupported"  // the engine offers nothing to act on this action with
	AdapterDropNoModel     = "no_model"     // the engine needs a model name and neither the hint nor --model gave one
	AdapterDropClosed      = "closed"       // the adapter stopped before the call started
	AdapterFailRefused     = "refused"      // the engine answered 4xx: the request is wrong for it, never retried
	AdapterFailServerError = "server_error" // 5xx: retried until the hint expires
	AdapterFailUnreachable = "unreachable"  // no connection: retried until the hint expires
	AdapterFailTimeout     = "timeout"      // no answer within the call timeout: not retried (the engine is busy)
	AdapterFailRedirected  = "redirected"   // a 3xx to another host (or past 3 hops): not followed, never retried
)

// Adapter are the counters of `hintstream adapter` (package adapter): the
// hints it turned into engine calls and why the others were not.
type Adapter struct {
	set

	Accepted *CounterVec // by action type
	Dropped  *CounterVec // by reason, before any engine call
	Calls    *CounterVec // engine calls that succeeded, by action type
	Failed   *CounterVec // engine calls that failed, by reason (one count per attempt)
	Retries  *Counter
	// FarFuture counts hints whose expires_at_ms lay past the adapter's
	// MaxHintLife, acted on as if they expired then.
	FarFuture *Counter
	CallTimes prometheus.Histogram
}

// NewAdapter returns an adapter's counters at 0.
func NewAdapter() *Adapter {
	a := &Adapter{set: newSet()}
	b := builder{&a.set}
	a.Accepted = b.vec("hintstream_adapter_accepted_total", "action", "Hints queued for an engine call, by action type.", "kv.prefetch", "hintstream.retain")
	a.Dropped = b.vec("hintstream_adapter_dropped_total", "reason", "Hints dropped before any engine call, by reason.",
		AdapterDropExpired, AdapterDropQueueFull, AdapterDropUnsupported, AdapterDropNoModel, AdapterDropClosed)
	a.Calls = b.vec("hintstream_adapter_engine_calls_total", "action", "Engine calls answered 2xx, by the action they carried out.", "kv.prefetch", "hintstream.retain")
	a.Failed = b.vec("hintstream_adapter_engine_failures_total", "reason", "Engine call attempts that failed or were refused, by reason.",
		AdapterFailRefused, AdapterFailServerError, AdapterFailUnreachable, AdapterFailTimeout, AdapterFailRedirected)
	a.Retries = b.counter("hintstream_adapter_engine_retries_total", "Engine calls tried again after a server error or no connection, before the hint expired.")
	a.FarFuture = b.counter("hintstream_adapter_far_future_total", "Hints whose expires_at_ms lay past --max-hint-life, acted on as if they expired then.")
	a.CallTimes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hintstream_adapter_engine_call_seconds",
		Help:    "Latency of engine calls that got an answer (any status).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	a.reg.MustRegister(a.CallTimes)
	return a
}
