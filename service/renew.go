package service

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/consumers"
)

// startRenewals runs the pins' renewals on their own goroutine, within
// the --pin-renew-rate budget (consumers/renew_async.go), and ticks their
// clock every second, so that pins are renewed on time when no event
// arrives to advance it: the renewal ticker, one part of the service's
// group (run.go).
func (s *Service) startRenewals(pins *consumers.Pinning) {
	if pins == nil || pins.RenewMax <= 0 {
		return
	}
	pins.RenewRate = s.cfg.PinRenewRate
	s.lc.run(stageRenewals, "pin renewals", func(ctx context.Context) error { return runRenewals(ctx, pins) })
}

// runRenewals ticks pins' clock until ctx ends, then waits for the
// renewals under way (they run under ctx too).
func runRenewals(ctx context.Context, pins *consumers.Pinning) error {
	renewing := pins.RunRenewals(ctx)
	defer func() { <-renewing }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			pins.Tick(now)
		}
	}
}

// bucketCap is the options capping a pin bucket at n bytes (0: its
// default, negative: none).
func (s *Service) bucketCap(n int64) []consumers.BucketOption {
	return []consumers.BucketOption{consumers.WithMaxBytes(n), consumers.WithUpdateBucket(s.cfg.UpdateStreams),
		consumers.WithBucketLogger(s.log)}
}
