package service

import (
	"flag"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/emit/lmcachepin"
	"github.com/hintstream/hintstream/internal/cmdline"
)

// registerPinFlags registers the tool-call pins' flags: the Mooncake pin
// endpoint, the request index, --retain-on-worker, and the pin path's
// bounds.
//
// The bounds are operator-facing because they trade memory for coverage:
// the caps bound what one tool-call response can make a member allocate
// (docs/limits.md, "The pin path"), the slot timings set how large
// hintstream_pins stays under churn (records live a pin's TTL plus the
// linger), and the bucket caps and renewal budget bound the state pins
// keep.
func (c *Config) registerPinFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.PinEndpoint, "pin-endpoint", cmdline.Env("DYN_KVM_PIN_ENDPOINT", ""), "Mooncake master's PULL socket for tool-call pins (env DYN_KVM_PIN_ENDPOINT), for a master that implements kv.pin (stock Mooncake has no pin RPC); empty: no Mooncake pins")
	fs.StringVar(&c.Pins, "pins", PinsAuto, "tool-call pins: auto (on when a pin target is set: --pin-endpoint, --lmcache-controller, --retain-on-worker), on (refused without one) or off")
	fs.StringVar(&c.LMCache.URL, "lmcache-controller", "", "LMCache controller's base URL (e.g. http://lmcache-controller:9000): tool-call pins through its POST /pin, "+
		"pinned again every --lmcache-repin until hintstream's TTL, released on the session's next turn; empty: no LMCache pins")
	fs.StringVar(&c.LMCache.Instance, "lmcache-instance", lmcachepin.DefaultInstance, "LMCache instance id a worker's pins go to; {worker_id} and {dp_rank} are replaced by the serving worker's")
	fs.StringVar(&c.LMCache.Location, "lmcache-location", lmcachepin.DefaultLocation, "LMCache storage backend the pins hold pages in")
	fs.DurationVar(&c.LMCache.Repin, "lmcache-repin", lmcachepin.DefaultRepin, "how often a held LMCache pin is pinned again; below the deployment's pin_timeout_sec (LMCache's default 300s), which is how long a released pin lingers")
	fs.DurationVar(&c.RequestIndexTTL, "request-index-ttl", DefaultRequestIndexTTL, "how long a response may trail its request and still be pinned")
	// At each tool-call pin, also send the serving worker a hintstream.retain@1.0
	// (for `hintstream adapter` beside it; the only tool-call hint when no
	// --pin-endpoint is set). A run's choice only: replay does not send it.
	fs.BoolVar(&c.Decisions.RetainOnWorker, "retain-on-worker", false, "at each tool call, also send the serving worker's hint socket a hintstream.retain of the turn's tokens "+
		"(TTL and priority as the pin's), for `hintstream adapter` to keep them in the engine's cache; works without --pin-endpoint")
	fs.IntVar(&c.Decisions.MaxPinKeys, "pin-max-keys", actions.DefaultMaxPinKeys,
		"cap on one pin's object keys; a longer pin is cut to its leading pages, one page over it is not pinned")
	cmdline.BytesVar(fs, &c.Decisions.MaxPinBytes, "pin-max-bytes", actions.DefaultMaxPinBytes,
		"cap on one pin's object keys in bytes, as --pin-max-keys")
	fs.DurationVar(&c.PinSlotLinger, "pin-slot-linger", pins.DefaultSlotLinger,
		"how long a session's pin slot record outlives its pin (a session returning later still teaches the tool-time learner); applies to a new hintstream_pins bucket or with --update-streams")
	fs.DurationVar(&c.PinSlotMarkerTTL, "pin-slot-marker-ttl", pins.DefaultSlotMarkerTTL,
		"how long a released slot's delete marker stays (at least 1s); applies as --pin-slot-linger")
	fs.Float64Var(&c.PinRenewRate, "pin-renew-rate", pins.DefaultPinRenewRate, "budget of pin renewals per second, on their own goroutine; a due renewal waits for budget, and is skipped (counted) if its pin lapsed meanwhile")
	cmdline.BytesVar(fs, &c.PinSlotsMaxBytes, "pin-slots-max-bytes", pins.DefaultPinSlotsMaxBytes, "size cap of the hintstream_pins bucket when created (or with --update-streams); when full, new pins are sent but not renewed (0: no cap)")
	cmdline.BytesVar(fs, &c.RequestIndexMaxBytes, "request-index-max-bytes", pins.DefaultRequestIndexMaxBytes, "size cap of the hintstream_requests bucket when created (or with --update-streams); when full, new requests are not indexed and their responses not pinned (0: no cap)")
}

// applyPinFlags checks the request index's TTL and the pin path's bounds,
// and takes the command line's 0 bucket cap as NoBound.
func (c *Config) applyPinFlags(*runFlags) error {
	switch {
	case c.RequestIndexTTL <= 0:
		return flagError("--request-index-ttl must be positive, got %v", c.RequestIndexTTL)
	case c.Decisions.MaxPinKeys < 1:
		return flagError("--pin-max-keys must be at least 1, got %d", c.Decisions.MaxPinKeys)
	case c.Decisions.MaxPinBytes < 1:
		return flagError("--pin-max-bytes must be at least 1, got %d", c.Decisions.MaxPinBytes)
	case c.PinSlotLinger < 0:
		return flagError("--pin-slot-linger must not be negative, got %v", c.PinSlotLinger)
	case c.PinSlotMarkerTTL < time.Second:
		return flagError("--pin-slot-marker-ttl must be at least 1s (JetStream's minimum), got %v", c.PinSlotMarkerTTL)
	case c.PinRenewRate <= 0:
		return flagError("--pin-renew-rate must be positive, got %v", c.PinRenewRate)
	case c.PinSlotsMaxBytes < 0:
		return flagError("--pin-slots-max-bytes must not be negative, got %d", c.PinSlotsMaxBytes)
	case c.RequestIndexMaxBytes < 0:
		return flagError("--request-index-max-bytes must not be negative, got %d", c.RequestIndexMaxBytes)
	}
	c.PinSlotsMaxBytes, c.RequestIndexMaxBytes = noCap(c.PinSlotsMaxBytes), noCap(c.RequestIndexMaxBytes)
	return nil
}

// noCap maps the command line's 0 (no cap) to NoBound.
func noCap(n int64) int64 {
	if n == 0 {
		return NoBound
	}
	return n
}
