// Package actions builds KV-cache hints: KvHintsEnvelope messages holding
// typed actions such as kv.prefetch@1.0, kv.pin@1.0 and hintstream.retain, the
// Mooncake object keys they name, their TTLs and priorities. It is pure
// Go: the decisions, the pins and replay build envelopes without linking
// ZeroMQ.
//
// Delivery is behind the Sender interface. Hints are fire-and-forget:
// nobody answers them, a lost hint costs only performance and a late one
// is worthless, so a Sender never blocks, drops a hint at its deadline,
// and reports why with the sentinel errors here. The ZeroMQ senders are
// package actions/zmqsend; a Recorder writes hints as JSON lines.
package actions
