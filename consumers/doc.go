// Package consumers turns JetStream messages into index updates and hints.
//
// Two kinds of consumer live here, chosen by what their stream is for:
//
//   - State streams (KV events, load) build this instance's own view of the
//     cluster, so every instance reads all of them, in order, from the start
//     of the stream: an ordered (ephemeral, AckNone) consumer each. They
//     cannot be acked or terminated; a malformed state event is copied to the
//     dead-letter subject, counted and skipped.
//   - Trigger streams (requests, later responses) are work to be shared: a
//     durable pull consumer with explicit acks. A message is acked once its
//     hint is handed to a sender (or once it is known to need none), and a
//     malformed one is copied to the dead-letter subject, counted and
//     terminated with its reason, so it is never redelivered.
package consumers
