// Package loadtest measures hintstream under load. `make loadtest`
// (loadtest/cmd/loadtest) runs hintstream beside its yardsticks on one
// machine in one run: the floor (loadtest/floor) for hint latency and CPU
// per wake-up, `nats bench js ordered` for KV-event ingestion, each in
// alternated rounds judged on the median of per-round ratios
// (loadtest/speed), and the clairvoyant bound for the value of hints
// (loadtest/value, sim). This package holds the one-instance
// wake-up → hint latency benchmark and the cluster and spreading tests.
package loadtest
