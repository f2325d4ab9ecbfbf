// Package actions builds KV-cache hints (KvHintsEnvelope messages holding
// typed actions such as kv.prefetch@1.0) and delivers them over ZeroMQ PUSH
// sockets to worker schedulers and the Mooncake master.
//
// Hints are fire-and-forget: nobody answers them, a lost hint costs only
// performance and a late one is worthless. Delivery therefore never blocks
// the caller (Pool.Send only enqueues), gives up on a hint at its deadline,
// and keeps one goroutine, socket and bounded queue per endpoint so that a
// worker that is down never delays hints to the others.
package actions
