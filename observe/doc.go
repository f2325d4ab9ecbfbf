// Package observe serves hintstream's operational endpoints: Prometheus
// metrics, liveness, readiness, a read-only inspection API and
// (optionally) pprof.
//
// The metrics are read from the sources on each scrape (see Sources and
// newCollector): nothing is counted twice, and a scrape costs one pass
// over the typed families and the stats snapshots.
//
// The counters are metrics.Families: typed families defined once in
// package metrics, each with its HELP text and its known label values at
// 0 from start-up. They are exported as they are, but for the families
// labelled tool (hintstream_tooltime_observed_total and the gauge
// hintstream_tooltime_expected_seconds), which keep only the
// Sources.TopTools (default DefaultTopTools) most observed tools; the
// others' counts go to tool="other" and their gauges are left out
// (toplabels.go). The consumers label only the tools the tool-time
// learner tracks (tooltime.Learner.Label), so the counters themselves
// stay bounded.
//
// Fixed families (each only when its source is set):
//
//	hintstream_index_blocks{tier="device"|"other"}        gauge
//	hintstream_index_workers, _stale_workers, _hashes      gauge
//	hintstream_index_{gaps,out_of_order,unknown_parent,unknown_removals,cleared,dropped_full}_total  counter
//	hintstream_hints_sent_total{endpoint}                  counter
//	hintstream_hints_retried_total{endpoint}               counter
//	hintstream_hints_released_early_total{endpoint}        counter
//	hintstream_hints_dropped_total{endpoint,reason}        counter (every zmqsend.DropReasons at 0)
//	hintstream_sender_queue_depth{endpoint}                gauge
//	hintstream_hint_send_seconds{endpoint}                 summary (count and sum only)
//	hintstream_hint_send_max_seconds{endpoint}             gauge
//	hintstream_hint_latency_seconds{endpoint}              histogram (Sources.Latency)
//	hintstream_consumer_pending{consumer}                  gauge
//	hintstream_senders_open, _senders_max                  gauge (Sources.Budget, the socket budget)
//	hintstream_senders_evicted_total, _idle_closed_total   counter
//	hintstream_ready                                       gauge 1/0 (Sources.Ready, as /readyz)
//
// Before the pool has seen an endpoint, the endpoint families exist at 0
// for endpoint="departed". Endpoint labels come from the pool's stats, which forget an endpoint
// once no registered worker lists it (zmqsend.Pool.Forget), adding its
// counts to endpoint="departed" (zmqsend.DepartedEndpoint).
//
// The read-only inspection API (inspect.go; `hintstream inspect` is its
// client) answers JSON, 404 when its source is unset, 503 until ready:
//
//	GET  /v1/workers   registry records (CURVE key only as has_curve_key), load and staleness per dp rank
//	GET  /v1/index     index stats and the stale (worker, dp rank) pairs
//	POST /v1/overlap   {"model","token_ids"[,"request_id"]} → every candidate's logit terms and the
//	                   choice, booking nothing; body ≤ 16 MiB (413), ≤ 2^20 tokens (400)
//	GET  /v1/tooltime  learned tool times; 404 when tool-call pins are off
//	GET  /v1/outcomes  the last agent hints and their fate; 404 without --agents
package observe
