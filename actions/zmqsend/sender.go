package zmqsend

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/hintstream/hintstream/actions"
	zmq "github.com/pebbe/zmq4"
)

var dropReasons = [...]string{actions.DropExpired, actions.DropQueueFull, actions.DropRemoved, actions.DropClosed, actions.DropError, actions.DropBudget}

// DropReasons returns every actions.Drop* reason, the labels of
// EndpointStats.Dropped.
func DropReasons() []string { r := dropReasons; return r[:] }

// counters outlive the sender of an endpoint, so that stats stay monotonic
// across Remove and a later re-creation.
type counters struct {
	sent, retried, released, inline atomic.Uint64
	dropped                         [len(dropReasons)]atomic.Uint64

	// Send latency of sent hints, from enqueue to ZMQ accepting them, in ns.
	latCount       atomic.Uint64
	latSum, latMax atomic.Int64
}

// sentAfter records one hint ZMQ accepted d after it was enqueued.
func (c *counters) sentAfter(d time.Duration) {
	c.sent.Add(1)
	c.latCount.Add(1)
	c.latSum.Add(int64(d))
	for {
		m := c.latMax.Load()
		if int64(d) <= m || c.latMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// queued is a hint with the time Pool.Send enqueued it, for latency stats.
type queued struct {
	actions.Hint
	at time.Time
}

func (c *counters) drop(reason string) {
	for i, r := range dropReasons {
		if r == reason {
			c.dropped[i].Add(1)
			return
		}
	}
}

// sender owns one PUSH socket. ZMQ sockets are not goroutine-safe: every
// use after newSender is under mu, which also gives the full memory
// barrier ZMQ asks for when a socket moves between threads. The run
// goroutine delivers what is queued; Pool.Send may send inline while
// nothing is pending.
type sender struct {
	endpoint string
	mu       sync.Mutex
	sock     *zmq.Socket
	closed   bool         // the socket is closed (under mu)
	pending  atomic.Int64 // enqueued and not yet delivered or dropped
	queue    chan queued
	stats    *counters
	log      *slog.Logger
	onSent   func(endpoint string, latency time.Duration)
	held     atomic.Int64 // queued or in delivery with a Done to call (WithMaxHeld)
	lastUsed atomic.Int64 // UnixNano of the last Send, for the socket budget's LRU
	keep     bool         // WithKeep: never closed for the budget or idleness

	drain chan struct{} // closed by Pool.Close: send what is queued, then exit

	abortOnce   sync.Once
	abort       chan struct{} // closed to drop everything still queued, now
	abortReason string        // written before abort is closed

	done chan struct{} // closed when run has closed the socket
}

func newSender(zctx *zmq.Context, endpoint string, o *poolOptions, stats *counters) (*sender, error) {
	sock, err := zctx.NewSocket(zmq.PUSH)
	if err != nil {
		return nil, err
	}
	for _, set := range []func() error{
		// Bound what ZMQ buffers per peer; our own queue is the visible one.
		func() error { return sock.SetSndhwm(1000) },
		// A blocked send must return so deadlines, Remove and Close are honoured.
		func() error { return sock.SetSndtimeo(o.sendTimeout) },
		// Close must not hang on hints a dead peer will never take.
		func() error { return sock.SetLinger(o.linger) },
		// Don't queue to a peer that isn't connected, so a down worker doesn't silently absorb hints.
		func() error { return sock.SetImmediate(true) },
		// Reconnect quickly after a worker restart: hints are short-lived.
		func() error { return sock.SetReconnectIvl(100 * time.Millisecond) },
		// ...but don't hammer a worker that stays down: one attempt a second
		// at most, soon enough that a worker back from an outage gets the
		// hints still valid (a prefetch lives 2 s by default).
		func() error { return sock.SetReconnectIvlMax(time.Second) },
		// CURVE keys must be set before Connect, which fixes the mechanism.
		func() error { return o.curve.apply(sock, endpoint) },
		func() error { return sock.Connect(endpoint) },
	} {
		if err := set(); err != nil {
			sock.Close()
			return nil, err
		}
	}
	s := &sender{
		endpoint: endpoint,
		keep:     o.keep[endpoint],
		sock:     sock,
		queue:    make(chan queued, o.queueSize),
		stats:    stats,
		log:      o.logger.With("endpoint", endpoint),
		onSent:   o.onSent,
		drain:    make(chan struct{}),
		abort:    make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.lastUsed.Store(time.Now().UnixNano())
	return s, nil
}

// stop makes run drop what is queued with reason and exit; the first
// reason wins.
func (s *sender) stop(reason string) {
	s.abortOnce.Do(func() {
		s.abortReason = reason
		close(s.abort)
	})
}

func (s *sender) run() {
	defer close(s.done)
	defer s.closeSocket()
	for {
		select {
		case <-s.abort:
			s.dropQueued()
			return
		case h := <-s.queue:
			s.deliver(h)
			h.NotifyRelease()
			s.pending.Add(-1)
		case <-s.drain:
			// Nothing is enqueued any more: the pool is closed.
			for {
				select {
				case <-s.abort:
					s.dropQueued()
					return
				case h := <-s.queue:
					s.deliver(h)
					h.NotifyRelease()
					s.pending.Add(-1)
				default:
					return
				}
			}
		}
	}
}

func (s *sender) closeSocket() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // retired (budget.go): closed at once, before run ended
	}
	s.closed = true
	select {
	case <-s.abort:
		// Whatever ZMQ still buffers is abandoned with the rest.
		_ = s.sock.SetLinger(0)
	default:
	}
	if err := s.sock.Close(); err != nil {
		s.log.Warn("close hint socket", "err", err)
	}
}

func (s *sender) dropQueued() {
	for {
		select {
		case q := <-s.queue:
			s.dropHint(q.Hint, s.abortReason)
			q.NotifyRelease()
			s.pending.Add(-1)
		default:
			return
		}
	}
}

func (s *sender) dropHint(h actions.Hint, reason string) {
	defer h.NotifyDone(false)
	if h.Dropped != nil {
		defer h.Dropped()
	}
	s.stats.drop(reason)
	s.log.Debug("hint dropped", "message_id", h.MessageID, "reason", reason)
}

// deliver sends h, retrying with exponential backoff while the peer is
// absent or full, until h's deadline or an abort.
func (s *sender) deliver(q queued) {
	h := q.Hint
	var (
		b     *backoff.ExponentialBackOff // only once the first attempt failed
		timer *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-s.abort:
			s.dropHint(h, s.abortReason)
			return
		default:
		}
		if !time.Now().Before(h.Deadline) {
			s.dropHint(h, actions.DropExpired)
			return
		}
		s.mu.Lock()
		_, err := s.sock.SendBytes(h.Body, 0)
		s.mu.Unlock()
		if err == nil {
			s.sent(q)
			return
		}
		if !retryable(err) {
			defer h.NotifyDone(false)
			if h.Dropped != nil {
				defer h.Dropped()
			}
			s.stats.drop(actions.DropError)
			s.log.Warn("hint send failed", "message_id", h.MessageID, "err", err)
			return
		}
		if b == nil {
			b = backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(5*time.Millisecond),
				backoff.WithMaxInterval(250*time.Millisecond),
				backoff.WithMaxElapsedTime(0), // the hint's deadline bounds the retries
			)
		}
		wait := min(b.NextBackOff(), time.Until(h.Deadline))
		s.stats.retried.Add(1)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-s.abort:
			s.dropHint(h, s.abortReason)
			return
		}
	}
}

func (s *sender) sent(q queued) {
	d := time.Since(q.at)
	s.stats.sentAfter(d)
	if s.onSent != nil {
		s.onSent(s.endpoint, d)
	}
	q.Hint.NotifySent()
	q.Hint.NotifyDone(true)
}

// trySendNow sends q on the caller's goroutine when nothing is pending
// (so hints to one endpoint keep their order), the socket is free, and
// ZMQ takes it without waiting; it reports whether it did. This spares
// the common case, an idle endpoint with a connected peer, the hand-off
// to the run goroutine and back.
func (s *sender) trySendNow(q queued) bool {
	if s.pending.Load() != 0 || !s.mu.TryLock() {
		return false
	}
	ok := false
	if !s.closed && s.pending.Load() == 0 {
		_, err := s.sock.SendBytes(q.Body, zmq.DONTWAIT)
		ok = err == nil
	}
	s.mu.Unlock()
	if ok {
		s.stats.inline.Add(1)
		q.NotifyRelease()
		s.sent(q)
	}
	return ok
}

// retryable: EAGAIN is "no connected peer or peer at its HWM" after
// SNDTIMEO; EINTR is a signal. Anything else (ETERM, ENOTSOCK) is final.
func retryable(err error) bool {
	switch zmq.AsErrno(err) {
	case zmq.Errno(syscall.EAGAIN), zmq.Errno(syscall.EINTR):
		return true
	}
	return false
}
