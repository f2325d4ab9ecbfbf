// Package value measures what hintstream's hints are worth: the prefill
// they save. Run plays one workload (a Mooncake trace or synthetic
// agentic sessions, package workload) three times on identical simulated
// clusters (package sim), and computes a bound:
//
//   - no hints: requests are routed and served, nothing else;
//   - hintstream: a real hintstream (service.New) on an embedded
//     JetStream server sees the workers' KV events, loads and registry
//     records and the frontend's requests, wake-ups and responses, and
//     its hints reach the workers' and the L3 store's real ZMQ sockets;
//   - next-turn oracle: knows each conversation's next request. At a
//     wake-up it loads exactly that request's L3-resident pages into the
//     worker the router picks at that moment; at a tool call it pins
//     exactly the pages the next request reuses, until that request
//     arrives. It acts on the same triggers as hintstream and picks a
//     prefetch's worker by the same rule, so what it shows is what
//     knowing the next turn is worth through hintstream's mechanisms. It
//     is not an upper bound: a run can beat it (a pin held longer keeps
//     pages another conversation reuses);
//   - clairvoyant bound (bound.go): knows every future request, evicts by
//     Belady's rule and has every turn's reusable pages on its worker when
//     it arrives, with the same capacities. No run can cost less; Run
//     fails with ErrBoundBeaten if one does, and bound_test.go checks it
//     against an exhaustive search of every policy on small workloads.
//
// # Cost
//
// A recomputed prompt token costs 1, a token loaded from L3 costs Alpha
// (default 0.25), a device hit 0. Alpha is the time to move a token's KV
// over the network relative to computing it: for an 8B model (about
// 128 KiB of KV per token) at 25 GB/s, about 5 µs against 20–40 µs of
// prefill compute, and higher with smaller pages and slower links; 0.25
// is a middle value, configurable. A run's saving is the no-hints run's
// cost minus its own; OfBound = saving(hintstream) / saving(bound) and
// Recovered = saving(hintstream) / saving(next-turn oracle).
//
// # Simulated time
//
// The runs do not take trace time: a simulated clock jumps from event to
// event. hintstream works on its own clock, so at every event the
// hintstream run waits (with a deadline, HintTimeout) until hintstream
// has finished with everything published so far and every hint it sent
// has been applied, and only then moves on; before a wake-up it also
// publishes the workers' current loads and waits until hintstream has
// applied every KV event (Service.WaitCaughtUp), as a live instance
// would have within the wake-up's lead time. Hints therefore take effect
// at the simulated time of the event that caused them.
//
// # Waiting for hintstream
//
// "Finished" is read from hintstream's own counters: every request ends
// in requests.plain, requests.malformed or one hints.prefetch.{skipped,
// dropped,queued}; every response in responses.no_pin, responses.malformed
// or one hints.pin.{skipped,dropped,queued}; and every queued hint is
// either sent (zmqsend.Pool's Sent) or dropped by its sender, each sent
// one received and applied here. No sleeps: the wait wakes on every hint
// that arrives and otherwise polls these in-process counters.
//
// # Times on the wire
//
// Events carry simulated times (received_at_ms, completed_at_ms) on an
// epoch a day ahead of the wall clock, so hintstream learns tool times in
// simulated time; see epochLead in hintstream.go for why the day ahead
// and how prefetch expiry is judged.
//
// # Defaults
//
// Four workers with 1,024 device blocks each (512K tokens, about what an
// 80 GB GPU holds for an 8B model) and an L3 of 6,144 pages (3.1M
// tokens). On the whole Mooncake trace that makes the no-hints run
// recompute 66.7% of prompt tokens, against 35.0% with unbounded caches
// (the compulsory misses): enough pressure that keeping and placing
// pages matters.
package value
