package service

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/consumers"
)

// startRenewals runs the pins' renewals on their own goroutine, within
// the --pin-renew-rate budget (consumers/renew_async.go), and ticks their
// clock every second, so that pins are renewed on time when no event
// arrives to advance it.
func (s *Service) startRenewals(pins *consumers.Pinning) {
	if pins == nil || pins.RenewMax <= 0 {
		return
	}
	pins.RenewRate = s.cfg.PinRenewRate
	ctx, cancel := context.WithCancel(context.Background())
	renewing := pins.RunRenewals(ctx)
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
				pins.Tick(now)
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
func (s *Service) bucketCap(n int64) []consumers.BucketOption {
	return []consumers.BucketOption{consumers.WithMaxBytes(n), consumers.WithUpdateBucket(s.cfg.UpdateStreams),
		consumers.WithBucketLogger(s.log)}
}
