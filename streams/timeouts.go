package streams

import "time"

// DefaultOpTimeout bounds one JetStream operation (a KV read or write, a
// consumer lookup or recreation, a dead-letter copy, a stream info): the
// one default every package derives its per-operation contexts from, each
// within its caller's context so shutdown cuts it short. Five seconds is
// JetStream's own API timeout in nats.go, so a bus that answers at all
// answers within it.
const DefaultOpTimeout = 5 * time.Second
