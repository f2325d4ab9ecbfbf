// Package client is the integration kit's Go side: what a frontend and a
// worker link in so that a real cluster needs no hand-written glue.
//
//   - Publisher publishes the request and response events hintstream
//     consumes (llm.requests.<model>, llm.responses.<model>), as JSON or
//     msgpack, with a Nats-Msg-Id derived from the request id so a
//     frontend's retries are dropped by JetStream's duplicate window, and
//     asynchronously with a bounded number of publishes awaiting their
//     ack.
//   - Register keeps a worker's record in the registry bucket alive: it
//     refreshes the record every interval with a per-key TTL of three
//     intervals, so a worker whose sidecar dies leaves the registry (and
//     hintstream closes its sender) without anyone deleting it.
//
// docs/wire.md describes every message; schemas/jsonschema/ has their
// JSON Schemas.
package client
