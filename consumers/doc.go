// Package consumers is hintstream's JetStream side: it hands trigger
// messages and load reports to the decisions (an engine.Engine, as
// engine.Message) and acts on what they say, and decodes KV-event
// messages for the index's applier (ApplyKV, index.Applier), which the
// decisions are not on the way to. The decisions themselves live in
// package engine (and pins).
//
// Two kinds of consumer live here, chosen by what their stream is for:
//
//   - State streams (KV events, load) build this instance's own view of the
//     cluster, so every instance reads all of them, in order, from the start
//     of the stream: an ordered (ephemeral, AckNone) consumer each. They
//     cannot be acked or terminated; a malformed state event is copied to the
//     dead-letter subject, counted and skipped.
//   - Trigger streams (requests, later responses) are work to be shared: a
//     durable pull consumer with explicit acks, settled by the decision's
//     engine.Outcome: acked once its hint has left (or once it is known to
//     need none), handed back after a delay on a transient failure, and a
//     malformed one is copied to the dead-letter subject, counted and
//     terminated with its reason, so it is never redelivered.
//
// As in watermill's router, a handler returns its result and the consumer
// settles the message: the decisions return an Outcome, and
// dead-lettering is middleware around them (middleware.go) that copies
// and counts a rejected event before the consumer terminates it. A state
// consumer's apply returns an error, which the consumer dead-letters
// itself (StateConsumer.deadLetter) before it skips the event.
package consumers
