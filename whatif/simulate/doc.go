// Package simulate is the engine of `hintstream whatif`: it measures
// what hintstream's hints are worth, the prefill they save, by playing a
// workload (a Mooncake trace or synthetic agentic sessions, package
// whatif/workload) on identical simulated clusters (package
// whatif/cluster). Simulate plays hintstream's decision engine in
// process, one run per policy; Run plays the runs below, its hintstream
// run supplied by the caller (Config.Hintstream: the real service, in
// loadtest/value, which this package does not link). Both compute the
// bounds:
//
//   - no hints: requests are routed and served, nothing else;
//   - hintstream: Simulate's policy runs feed hintstream's engine the
//     events a live instance sees and apply its hints; Run's is the real
//     service (loadtest/value);
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
// # Defaults
//
// Four workers with 1,024 device blocks each (512K tokens, about what an
// 80 GB GPU holds for an 8B model) and an L3 of 6,144 pages (3.1M
// tokens). On the whole Mooncake trace that makes the no-hints run
// recompute 66.7% of prompt tokens, against 35.0% with unbounded caches
// (the compulsory misses): enough pressure that keeping and placing
// pages matters.
package simulate
