// Package speed measures hintstream's latency and throughput against
// yardsticks run on the same machine, in the same run:
//
//   - Latency: an open-loop publisher of wake-ups at a fixed rate against
//     the hintstream binary or the floor binary (loadtest/cmd/floor), both
//     on one embedded nats-server; latency is hint receipt at a real ZMQ
//     PULL socket minus the wake-up's scheduled send time (so a stalled
//     publisher or consumer cannot hide its own delay: no coordinated
//     omission), recorded in an hdr.Histogram. Pair runs two programs
//     side by side, the wake-ups going to each in turns of a few
//     milliseconds, so that the machine's stalls fall on both alike.
//   - Ingest: KV events pre-filled in a stream, then the time hintstream
//     takes to apply all of them, beside NatsBench (`nats bench js
//     ordered`) reading the same stream.
//
// Every function starts the programs it measures as child processes and
// stops them before returning; nothing is left running.
package speed
