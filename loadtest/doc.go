// Package loadtest measures hintstream under load. For now it holds the
// wake-up → hint latency benchmark of one instance on an embedded
// JetStream server; the load generator, the simulated cluster and the
// report of `make loadtest` grow here.
package loadtest
