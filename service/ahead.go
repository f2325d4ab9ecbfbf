package service

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/decide/ahead"
)

// DefaultAheadTick is how often the wall clock ticks the header-free
// prefetch scheduler between events (events tick it too, at their own
// time): a prefetch is sent at most this late when traffic is quiet.
const DefaultAheadTick = 250 * time.Millisecond

// aheadScheduler builds the header-free prefetch scheduler when
// Config.Ahead is set (nil: off). Its counters are the service's.
func (s *Service) aheadScheduler() (*ahead.Scheduler, error) {
	if s.cfg.Ahead == nil {
		return nil, nil
	}
	sched, err := ahead.New(*s.cfg.Ahead, &s.Counters.Ahead)
	if err != nil {
		return nil, err
	}
	s.Ahead = sched
	c := sched.Config()
	s.log.Info("header-free prefetch on", "max_waste", c.MaxWaste, "l3_bandwidth", c.L3Bandwidth,
		"kv_bytes_per_token", c.KVBytesPerToken, "contexts", c.Contexts)
	return sched, nil
}

// runAheadTicks ticks the scheduler on the wall clock until ctx ends.
func (s *Service) runAheadTicks(ctx context.Context) error {
	t := time.NewTicker(DefaultAheadTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			s.engine.TickAhead(ctx, now)
		}
	}
}
