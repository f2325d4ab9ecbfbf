package service

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/pins"
)

// startRenewals runs the pins' renewals on their own goroutine, within
// the --pin-renew-rate budget (pins/renew_async.go), and ticks their
// clock every second, so that pins are renewed on time when no event
// arrives to advance it.
func (s *Service) startRenewals(p *pins.Pinning) {
	if p == nil || p.RenewMax <= 0 {
		return
	}
	p.RenewRate = s.cfg.PinRenewRate
	ctx, cancel := context.WithCancel(context.Background())
	renewing := p.RunRenewals(ctx)
	s.renewStop, s.renewDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.renewDone)
		defer func() { cancel(); <-renewing }()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.renewStop:
				return
			case now := <-t.C:
				p.Tick(ctx, now)
			}
		}
	}()
}

func (s *Service) stopRenewals() {
	if s.renewStop != nil {
		close(s.renewStop)
		<-s.renewDone
	}
}

// bucketCap is the options capping a pin bucket at n bytes (0: its
// default, negative: none).
func (s *Service) bucketCap(n int64) []pins.BucketOption {
	return []pins.BucketOption{pins.WithMaxBytes(n), pins.WithUpdateBucket(s.cfg.UpdateStreams),
		pins.WithBucketLogger(s.log)}
}
