// Package pins derives tool-call pins: when a response ends in a tool
// call (or its request announced one), the conversation's pages are
// pinned in Mooncake's L3 for the expected tool time (kv.pin), renewed
// while the session has not come back, and released on its next turn.
// The request index (RequestIndex, a KV bucket over the requests stream)
// and the pin slots (PinSlots, one live pin per session) are shared by a
// consumer group; a replay gives in-memory stores instead.
//
// The decision engine (package engine) calls Pinning with plain inputs
// (stream sequence, time, the decoded event) and turns its errors into
// Outcomes: pins does not import hints. Store operations derive their
// timeout (streams.DefaultOpTimeout) from the caller's context.
package pins
