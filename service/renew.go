package service

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
)

// startRenewals runs the pins' renewals on their own goroutine, within
// the --pin-renew-rate budget (decide/pins/renew_async.go), and ticks their
// clock every second, so that pins are renewed on time when no event
// arrives to advance it: the renewal ticker, one part of the service's
// group (run.go).
func (s *Service) startRenewals(p *pins.Pinning) {
	if p == nil || p.RenewMax <= 0 {
		return
	}
	p.RenewRate = s.cfg.PinRenewRate
	s.lc.run(stageRenewals, "pin renewals", func(ctx context.Context) error { return runRenewals(ctx, p) })
}

// runRenewals ticks pins' clock until ctx ends, then waits for the
// renewals under way (they run under ctx too).
func runRenewals(ctx context.Context, p *pins.Pinning) error {
	renewing := p.RunRenewals(ctx)
	defer func() { <-renewing }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			p.Tick(ctx, now)
		}
	}
}

// bucketCap is the options capping a pin bucket at n bytes (0: its
// default, negative: none).
func (s *Service) bucketCap(n int64) []pins.BucketOption {
	return []pins.BucketOption{pins.WithMaxBytes(n), pins.WithUpdateBucket(s.cfg.UpdateStreams),
		pins.WithBucketLogger(s.log)}
}
