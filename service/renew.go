package service

import (
	"time"

	"github.com/hintstream/hintstream/consumers"
)

// startRenewals ticks the pins' renewal clock every second, so that pins
// are renewed on time when no event arrives to advance it.
func (s *Service) startRenewals(pins *consumers.Pinning) {
	if pins == nil || pins.RenewMax <= 0 {
		return
	}
	s.renewStop, s.renewDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.renewDone)
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
