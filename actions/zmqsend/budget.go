package zmqsend

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/actions"
	zmq "github.com/pebbe/zmq4"
)

// The socket budget. ZeroMQ refuses a context's 1,024th socket by default
// (ZMQ_MAX_SOCKETS_DFLT 1023, "too many open files"), and a sender used
// to live until its worker left the registry: a cluster with 1,024 hint
// endpoints silently got no hints for the next one. The pool now sizes
// the context for WithMaxEndpoints, closes senders idle for
// WithIdleClose, and makes room for a new endpoint by closing the least
// recently used idle sender.
const (
	// DefaultMaxEndpoints is WithMaxEndpoints' default: 512 nodes of 8 GPUs.
	DefaultMaxEndpoints = 4096
	// DefaultIdleClose is WithIdleClose's default.
	DefaultIdleClose = 5 * time.Minute
	// MaxEndpointsLimit is the largest WithMaxEndpoints accepted: libzmq's
	// own ceiling on a context's sockets (ZMQ_SOCKET_LIMIT with epoll)
	// less the slack.
	MaxEndpointsLimit = 60000
	// FileReserve is what FilesFor adds for everything but hint sockets:
	// the NATS connection, the HTTP server and its clients, an embedded
	// server's store files, ZMQ's own I/O and reaper threads.
	FileReserve = 1024
)

// ErrFileLimit: RLIMIT_NOFILE cannot be raised to what the socket budget
// needs (EnsureFileLimit).
var ErrFileLimit = errors.New("zmqsend: open-file limit too low for the socket budget")

// socketSlack is how many sockets the ZMQ context allows beyond the
// budget and the kept endpoints: zmq_close hands a socket to the reaper
// thread, which frees its slot a little later (after its linger when it
// still holds data), so a burst of evictions must not run into the
// context's limit.
func socketSlack(maxEndpoints int) int { return 64 + maxEndpoints/8 }

// socketsFor is the ZMQ_MAX_SOCKETS a pool with this budget and kept
// endpoints sets on its own context.
func socketsFor(maxEndpoints, kept int) int {
	return maxEndpoints + kept + socketSlack(maxEndpoints)
}

// FilesFor is the RLIMIT_NOFILE a process needs for a pool with this
// budget: two descriptors per ZMQ socket (its mailbox's eventfd and its
// connection) and FileReserve for the rest.
func FilesFor(maxEndpoints, kept int) uint64 {
	return 2*uint64(socketsFor(maxEndpoints, kept)) + FileReserve
}

// ValidateMaxEndpoints reports whether n is a usable budget.
func ValidateMaxEndpoints(n int) error {
	if n < 1 || n > MaxEndpointsLimit {
		return fmt.Errorf("zmqsend: max endpoints %d must be in 1..%d", n, MaxEndpointsLimit)
	}
	return nil
}

// WithMaxEndpoints bounds the open senders (one PUSH socket each) of
// endpoints not given to WithKeep (default DefaultMaxEndpoints). The
// pool's ZMQ context gets a ZMQ_MAX_SOCKETS to match (socketsFor). When a
// new endpoint finds the budget
// full, the least recently used sender with nothing queued is closed to
// make room; when every one has hints in flight the new endpoint's hint
// fails with actions.ErrBudget. It must be within 1..MaxEndpointsLimit.
func WithMaxEndpoints(n int) PoolOption {
	return func(o *poolOptions) {
		if err := ValidateMaxEndpoints(n); err != nil {
			o.errs = append(o.errs, fmt.Errorf("%w: %w", ErrInvalidOption, err))
			return
		}
		o.maxEndpoints = n
	}
}

// WithIdleClose closes a sender that has had nothing to send for d
// (default DefaultIdleClose; 0: never). A later hint reopens it, at the
// cost of one TCP (and CURVE) handshake. Kept endpoints never close.
// It must not be negative.
func WithIdleClose(d time.Duration) PoolOption {
	return func(o *poolOptions) {
		if d < 0 {
			o.invalid("idle close %v below 0", d)
			return
		}
		o.idleClose = d
	}
}

// WithKeep names endpoints whose sender is never closed for the budget or
// for idleness and does not count against WithMaxEndpoints: the Mooncake
// master's pin endpoint, whose pins must not wait for a handshake nor fail
// because workers took every socket.
func WithKeep(endpoints ...string) PoolOption {
	return func(o *poolOptions) {
		if o.keep == nil {
			o.keep = map[string]bool{}
		}
		for _, ep := range endpoints {
			if ep != "" {
				o.keep[ep] = true
			}
		}
	}
}

// sizeContext sets the budget on a context the pool created, before its
// first socket (libzmq fixes the limit then).
func (p *Pool) sizeContext() error {
	return p.zctx.SetMaxSockets(socketsFor(p.opts.maxEndpoints, len(p.opts.keep)))
}

// makeRoomLocked runs under p.mu (write) before a sender for a new
// endpoint is created: when the budget is full it retires the least
// recently used idle sender, or fails with actions.ErrBudget.
func (p *Pool) makeRoomLocked(endpoint string) error {
	if p.opts.keep[endpoint] || p.budgeted < p.opts.maxEndpoints {
		return nil
	}
	var victim *sender
	for _, s := range p.senders {
		if s.keep || !s.idle() {
			continue
		}
		if victim == nil || s.lastUsed.Load() < victim.lastUsed.Load() {
			victim = s
		}
	}
	if victim == nil {
		return fmt.Errorf("%w: %d endpoints all have hints in flight", actions.ErrBudget, p.budgeted)
	}
	p.retireLocked(victim)
	p.evicted.Add(1)
	return nil
}

// newSenderFailed explains a sender that could not be made (under p.mu).
// EMFILE is ZeroMQ's socket limit: closed sockets are handed to ZMQ's
// reaper thread, which may lag behind a burst of evictions by more than
// the slack; the hint is dropped for the budget (reason actions.DropBudget) and
// the endpoint's next hint finds the slot reclaimed.
func (p *Pool) newSenderFailed(endpoint string, err error) error {
	if zmq.AsErrno(err) == zmq.Errno(syscall.EMFILE) {
		p.countersLocked(endpoint).drop(actions.DropBudget)
		return fmt.Errorf("%w: ZeroMQ's socket limit for %q (closed sockets not reclaimed yet): %w", actions.ErrBudget, endpoint, err)
	}
	return fmt.Errorf("%w %q: %w", actions.ErrEndpoint, endpoint, err)
}

// retireLocked closes idle sender s (under p.mu, write). Nothing is
// queued or being delivered and no Send can reach it any more, so its
// socket is closed here and now, with the normal linger (ZMQ may finish
// writing what it took): a burst of new endpoints in a full budget must
// not outrun the run goroutines' closing and hit ZMQ's socket limit.
// Then run sees drain closed, finds the queue empty and exits.
func (p *Pool) retireLocked(s *sender) {
	p.deleteLocked(s.endpoint)
	s.closeSocket()
	close(s.drain)
}

// deleteLocked removes endpoint's sender from the pool's map (under p.mu,
// write), keeping the budget count.
func (p *Pool) deleteLocked(endpoint string) *sender {
	s := p.senders[endpoint]
	if s == nil {
		return nil
	}
	delete(p.senders, endpoint)
	if !s.keep {
		p.budgeted--
	}
	return s
}

// idle: nothing is queued or being delivered. Checked under p.mu (write),
// where no Send can enqueue.
func (s *sender) idle() bool { return s.pending.Load() == 0 }

// reapIdle closes the senders idle for WithIdleClose, every quarter of it
// (at most every 30 s), until Close.
func (p *Pool) reapIdle() {
	defer close(p.reaped)
	every := min(max(p.opts.idleClose/4, time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case now := <-t.C:
			cutoff := now.Add(-p.opts.idleClose).UnixNano()
			p.mu.Lock()
			if !p.closed {
				for _, s := range p.senders {
					if !s.keep && s.idle() && s.lastUsed.Load() <= cutoff {
						p.retireLocked(s)
						p.idleClosed.Add(1)
					}
				}
			}
			p.mu.Unlock()
		}
	}
}

// DepartedEndpoint is the Stats key (and metric endpoint label) under
// which Forget keeps the counts of endpoints that are gone, so that
// totals over all endpoints never go down when a worker leaves.
const DepartedEndpoint = "departed"

// Forget is Remove for an endpoint that is gone for good (its worker left
// the registry): its stats are added to those of DepartedEndpoint and
// dropped, so that metrics stop exporting series labelled with it while
// sums over endpoints stay monotonic.
func (p *Pool) Forget(endpoint string) {
	p.Remove(endpoint)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.stats[endpoint]
	if c == nil || p.senders[endpoint] != nil || endpoint == DepartedEndpoint {
		return // a Send meanwhile made a new sender: the endpoint is back
	}
	p.countersLocked(DepartedEndpoint).merge(c)
	delete(p.stats, endpoint)
}

// merge adds o's counts to c.
func (c *counters) merge(o *counters) {
	c.sent.Add(o.sent.Load())
	c.retried.Add(o.retried.Load())
	c.released.Add(o.released.Load())
	c.inline.Add(o.inline.Load())
	for i := range c.dropped {
		c.dropped[i].Add(o.dropped[i].Load())
	}
	c.latCount.Add(o.latCount.Load())
	c.latSum.Add(o.latSum.Load())
	if m := o.latMax.Load(); m > c.latMax.Load() {
		c.latMax.Store(m)
	}
}

// BudgetStats describes the socket budget.
type BudgetStats struct {
	Open       int    // senders open, kept endpoints included
	Max        int    // WithMaxEndpoints
	Evicted    uint64 // idle senders closed to make room for a new endpoint
	IdleClosed uint64 // senders closed after WithIdleClose without hints
}

// Budget returns the socket budget's state.
func (p *Pool) Budget() BudgetStats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return BudgetStats{Open: len(p.senders), Max: p.opts.maxEndpoints,
		Evicted: p.evicted.Load(), IdleClosed: p.idleClosed.Load()}
}
