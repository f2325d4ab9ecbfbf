// Package pins derives tool-call pins: when a response ends in a tool
// call (or its request announced one), the conversation's pages are
// pinned for the expected tool time, renewed while the session has not
// come back, and released on its next turn: in Mooncake's L3 (kv.pin, for
// a master that implements it), in a token-addressed store that keeps no
// TTL of its own (TokenPins: LMCache's controller, package lmcachepin),
// and on the serving worker (hintstream.retain, retain.go).
// The request index (RequestIndex, a KV bucket over the requests stream)
// and the pin slots (PinSlots, one live pin per session) are shared by a
// consumer group; a replay gives in-memory stores instead.
//
// The decision engine (package engine) calls Pinning with plain inputs
// (stream sequence, time, the decoded event) and turns its errors into
// Outcomes: pins does not import hints. Store operations derive their
// timeout (streams.DefaultOpTimeout) from the caller's context.
package pins
