package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/pins"
	"github.com/hintstream/hintstream/service"
)

// stateBoundFlags registers run's bounds on state (snapshot reclaim,
// renewal budget, pin bucket caps; the holding area's are decision flags,
// flags_decisions.go) and returns the function that
// validates them into a service.Config after parsing.
func stateBoundFlags(fs *flag.FlagSet) func(*service.Config) error {
	var (
		grace      = fs.Duration("snapshot-reclaim-grace", service.DefaultSnapshotReclaimGrace, "chunks of an interrupted snapshot save, idle this long, are purged after the next save and at start-up")
		renewRate  = fs.Float64("pin-renew-rate", pins.DefaultPinRenewRate, "budget of pin renewals per second, on their own goroutine; a due renewal waits for budget, and is skipped (counted) if its pin lapsed meanwhile")
		slotsBytes = fs.Int64("pin-slots-max-bytes", pins.DefaultPinSlotsMaxBytes, "size cap of the hintstream_pins bucket when created (or with --update-streams); when full, new pins are sent but not renewed (0: no cap)")
		reqBytes   = fs.Int64("request-index-max-bytes", pins.DefaultRequestIndexMaxBytes, "size cap of the hintstream_requests bucket when created (or with --update-streams); when full, new requests are not indexed and their responses not pinned (0: no cap)")
	)
	return func(cfg *service.Config) error {
		switch {
		case *grace <= 0:
			return fmt.Errorf("--snapshot-reclaim-grace must be positive, got %v", *grace)
		case *renewRate <= 0:
			return fmt.Errorf("--pin-renew-rate must be positive, got %v", *renewRate)
		case *slotsBytes < 0:
			return fmt.Errorf("--pin-slots-max-bytes must not be negative, got %d", *slotsBytes)
		case *reqBytes < 0:
			return fmt.Errorf("--request-index-max-bytes must not be negative, got %d", *reqBytes)
		}
		cfg.PinRenewRate = *renewRate
		cfg.PinSlotsMaxBytes, cfg.RequestIndexMaxBytes = noCap(*slotsBytes), noCap(*reqBytes)
		cfg.SnapshotReclaimGrace = *grace
		return nil
	}
}

// noCap maps the command line's 0 (no cap) to the Config's NoBound.
func noCap(n int64) int64 {
	if n == 0 {
		return service.NoBound
	}
	return n
}
