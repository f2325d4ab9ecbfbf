// Package value measures what the real hintstream service's hints are
// worth: it is the real-service harness around the simulator that
// `hintstream whatif` runs (package whatif/simulate). Run plays one
// workload on identical simulated clusters without hints, with the
// next-turn oracle and with a real hintstream (service.New) on an
// embedded JetStream server that sees the workers' KV events, loads and
// registry records and the frontend's requests, wake-ups and responses,
// its hints reaching the workers' and the L3 store's real ZMQ sockets;
// and computes the clairvoyant and hint-reachable bounds. The cost model,
// the bounds and the defaults are whatif/simulate's.
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
package value

import (
	"context"

	"github.com/hintstream/hintstream/whatif/simulate"
)

// The simulator's types, as this package's callers and tests name them.
type (
	Config     = simulate.Config
	Result     = simulate.Result
	ModeResult = simulate.ModeResult
)

// ErrConfig is the simulator's: a Config that cannot be run.
var ErrConfig = simulate.ErrConfig

// Run is simulate.Run with the real service as its hintstream run.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.Hintstream = startHintstream
	return simulate.Run(ctx, cfg)
}
