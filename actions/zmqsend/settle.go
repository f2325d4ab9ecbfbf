package zmqsend

import (
	"sync"
	"time"
)

// DefaultSettleDelay is the default WithSettleDelay.
const DefaultSettleDelay = 25 * time.Millisecond

// WithSettleDelay delays Done(true) by d after ZMQ took a hint (default
// DefaultSettleDelay; 0: at once). ZMQ takes a hint into its own
// in-process queue and its I/O thread writes it to the connection a
// moment later, more than a moment on a loaded machine: a process killed
// in between loses the hint, so its trigger must not be acked yet. With
// the delay, a SIGKILL loses a hint only if ZMQ held it longer than d
// (seen: up to about 100 hints, 8 ms of sending, on a loaded 2-core
// machine), and re-sends (duplicates) the ones sent within d before it.
// The delay holds consumer acks, not hints: a consumer's MaxAckPending
// must cover its hint rate times d. Done(false) is never delayed.
//
// Done(true) follows between d and d + d/settleCoalesce after ZMQ took
// the hint: the settler wakes once for every hint that is due in that
// span rather than once per hint (measured: a wake-up per hint, twice,
// was a tenth of hintstream's CPU over the floor's at 2,000 hints/s).
func WithSettleDelay(d time.Duration) PoolOption {
	return func(o *poolOptions) {
		if d < 0 {
			o.invalid("settle delay %v below 0", d)
			return
		}
		o.settleDelay = d
	}
}

// settleCoalesce: a settler that wakes for the first hint due also
// settles those due within delay/settleCoalesce of it.
const settleCoalesce = 5

// settler calls Done(true) functions once their delay has passed, in the
// order they were handed over, on its own goroutine.
type settler struct {
	delay, slack time.Duration

	mu      sync.Mutex
	q       []settling
	due     []settling // run's scratch
	stopped bool
	started bool          // start ran (under the pool's mu)
	wake    chan struct{} // capacity 1
	stop    chan struct{}
	done    chan struct{}
}

type settling struct {
	due  time.Time
	done func(bool)
}

func newSettler(delay time.Duration) *settler {
	s := &settler{delay: delay, slack: delay / settleCoalesce, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	return s
}

// start runs the settler's goroutine; once, under the pool's mu, with the
// pool's first sender (no Done can be queued before one exists).
func (s *settler) start() {
	if s == nil || s.started {
		return
	}
	s.started = true
	go s.run()
}

// wrap returns done delayed as the settler delays it; nil stays nil.
func (s *settler) wrap(done func(bool)) func(bool) {
	if s == nil || done == nil {
		return done
	}
	return func(sent bool) {
		if !sent || !s.add(done) {
			done(sent)
		}
	}
}

// add queues done; false once the settler is stopped (call it at once).
func (s *settler) add(done func(bool)) bool {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return false
	}
	// Dues only grow (now + a fixed delay): with hints already waiting,
	// run's timer is set for one due no later than this one's.
	first := len(s.q) == 0
	s.q = append(s.q, settling{time.Now().Add(s.delay), done})
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return true
}

func (s *settler) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := time.Now()
		i := 0
		for i < len(s.q) && !s.q[i].due.After(now) {
			i++
		}
		due := append(s.due[:0], s.q[:i]...)
		n := copy(s.q, s.q[i:])
		clear(s.q[n:]) // no settled closure kept alive by the backing array
		s.q = s.q[:n]
		wait := time.Hour
		if n > 0 {
			wait = time.Until(s.q[0].due) + s.slack
		}
		s.mu.Unlock()
		for _, x := range due {
			x.done(true)
		}
		clear(due)
		s.due = due
		timer.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// close settles everything still waiting at once (the pool has flushed
// or given up on its sockets) and stops the goroutine.
func (s *settler) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.stopped = true
	rest := s.q
	s.q = nil
	s.mu.Unlock()
	close(s.stop)
	if s.started {
		<-s.done
	}
	for _, x := range rest {
		x.done(true)
	}
}
