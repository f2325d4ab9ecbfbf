package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/observe/metrics"
	zmq "github.com/pebbe/zmq4"
)

// DefaultDedupWindow is how many recent message ids a Receiver remembers
// to drop repeats (hintstream retries a hint under the same id).
const DefaultDedupWindow = 4096

// pollInterval bounds how long Run takes to notice its context ended.
const pollInterval = 50 * time.Millisecond

// Sentinel errors, usable with errors.Is.
var (
	// ErrInvalidOption: an option was given a value it cannot take.
	ErrInvalidOption = errors.New("receiver: invalid option")
	// ErrCurveUnsupported: CURVE was asked for but libzmq lacks it.
	ErrCurveUnsupported = errors.New("receiver: libzmq has no CURVE support")
)

// Hint is one kv.prefetch or kv.pin action handed to the Handler.
type Hint struct {
	Endpoint  string // the bound endpoint it arrived at
	MessageID string // the envelope's message_id
	Action
}

// Handler receives each hint on Run's goroutine: it must return quickly
// (hand long work to another goroutine).
type Handler func(ctx context.Context, h Hint)

// Option configures a Receiver.
type Option func(*options) error

type options struct {
	window      int
	slots       int
	curveSecret string
	now         func() time.Time
	counters    *metrics.Receiver
	log         *slog.Logger
	workerID    uint64 // worker_filter.go; 0: every worker's
	maxMsg      int    // maxsize.go; 0: no limit
}

// WithDedupWindow sets how many recent message ids are remembered
// (default DefaultDedupWindow).
func WithDedupWindow(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: dedup window %d, want > 0", ErrInvalidOption, n)
		}
		o.window = n
		return nil
	}
}

// WithSlotWindow sets how many pin slots' last revisions are remembered
// (default DefaultSlotWindow; see revision.go).
func WithSlotWindow(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: slot window %d, want > 0", ErrInvalidOption, n)
		}
		o.slots = n
		return nil
	}
}

// WithCurveServer makes the PULL socket a CURVE server holding secretKey
// (Z85, 40 characters): only senders that know its public key can
// connect (hintstream run --curve-server-keys). Default plain text.
func WithCurveServer(secretKey string) Option {
	return func(o *options) error {
		if len(secretKey) != 40 {
			return fmt.Errorf("%w: CURVE secret key must be 40 Z85 characters", ErrInvalidOption)
		}
		o.curveSecret = secretKey
		return nil
	}
}

// WithClock sets the clock prefetch expiry is judged by (default
// time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		o.now = now
		return nil
	}
}

// WithCounters counts into c (default metrics.NewReceiver(), see
// Counters).
func WithCounters(c *metrics.Receiver) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("%w: nil counters", ErrInvalidOption)
		}
		o.counters = c
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l != nil {
			o.log = l
		}
		return nil
	}
}

// Receiver is a bound PULL socket and the rules above. Its socket belongs
// to Run's goroutine.
type Receiver struct {
	sock     *zmq.Socket
	endpoint string
	handler  Handler
	o        options
	seen     *window
	revs     *slotRevisions
	close    sync.Once
	invalid  atomic.Uint64 // messages refused, for the log's rate
	legacy   sync.Once     // the first action under a retired name is logged
}

// New binds a PULL socket at bind ("tcp://127.0.0.1:*" picks a free
// port; Endpoint tells which) and returns a Receiver that Run serves.
func New(bind string, h Handler, opts ...Option) (*Receiver, error) {
	o := options{window: DefaultDedupWindow, slots: DefaultSlotWindow, now: time.Now, counters: metrics.NewReceiver(), log: slog.Default()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if h == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrInvalidOption)
	}
	if o.curveSecret != "" && !zmq.HasCurve() {
		return nil, ErrCurveUnsupported
	}
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		return nil, fmt.Errorf("receiver: socket: %w", err)
	}
	if err := configure(sock, o); err != nil {
		sock.Close()
		return nil, err
	}
	if err := sock.Bind(bind); err != nil {
		sock.Close()
		return nil, fmt.Errorf("receiver: bind %s: %w", bind, err)
	}
	ep, err := sock.GetLastEndpoint()
	if err != nil {
		sock.Close()
		return nil, fmt.Errorf("receiver: bound endpoint: %w", err)
	}
	return &Receiver{sock: sock, endpoint: ep, handler: h, o: o, seen: newWindow(o.window),
		revs: newSlotRevisions(o.slots)}, nil
}

func configure(sock *zmq.Socket, o options) error {
	if err := sock.SetLinger(0); err != nil {
		return fmt.Errorf("receiver: linger: %w", err)
	}
	if err := sock.SetRcvtimeo(pollInterval); err != nil {
		return fmt.Errorf("receiver: receive timeout: %w", err)
	}
	if o.maxMsg > 0 {
		if err := sock.SetMaxmsgsize(int64(o.maxMsg)); err != nil {
			return fmt.Errorf("receiver: max message size: %w", err)
		}
	}
	if o.curveSecret != "" {
		if err := sock.SetCurveServer(1); err != nil {
			return fmt.Errorf("receiver: CURVE server: %w", err)
		}
		if err := sock.SetCurveSecretkey(o.curveSecret); err != nil {
			return fmt.Errorf("%w: CURVE secret key rejected", ErrInvalidOption)
		}
	}
	return nil
}

// Endpoint is the bound endpoint, with the port a wildcard picked.
func (r *Receiver) Endpoint() string { return r.endpoint }

// Counters are the receiver's counters (see WithCounters).
func (r *Receiver) Counters() *metrics.Receiver { return r.o.counters }

// Run receives until ctx ends, then closes the socket and returns nil. A
// message that is not a valid envelope is counted and logged, never fatal.
func (r *Receiver) Run(ctx context.Context) error {
	defer r.Close()
	for ctx.Err() == nil {
		b, err := r.sock.RecvBytes(0)
		if err != nil {
			switch zmq.AsErrno(err) {
			case zmq.Errno(syscall.EAGAIN), zmq.Errno(syscall.EINTR):
				continue
			case zmq.ETERM:
				return nil
			}
			return fmt.Errorf("receiver: receive on %s: %w", r.endpoint, err)
		}
		r.Handle(ctx, b)
	}
	return nil
}

// Close closes the socket of a Receiver that is not running (Run closes
// it on return); it may be called more than once.
func (r *Receiver) Close() { r.close.Do(func() { r.sock.Close() }) }

// Handle applies the rules to one message as Run does; a receiver that
// owns its own socket calls it directly.
func (r *Receiver) Handle(ctx context.Context, b []byte) {
	c := r.o.counters
	c.Received.Inc()
	env, err := Decode(b)
	if err != nil {
		c.Invalid.Inc()
		// A line per bad message would let a flood of them flood the log:
		// the 1st, 2nd, 4th, 8th, ... are logged, with the count.
		if n := r.invalid.Add(1); n&(n-1) == 0 {
			r.o.log.Warn("hint rejected", "endpoint", r.endpoint, "err", err, "invalid_total", n)
		}
		return
	}
	if !r.seen.add(env.MessageID) {
		c.Duplicate.Inc()
		return
	}
	now := r.o.now().UnixMilli()
	for _, a := range env.Actions {
		if a.Legacy {
			c.LegacyAction.Inc()
			r.legacy.Do(func() {
				r.o.log.Warn("hint action under its retired name, acted on as the new one; the old name is accepted for one release",
					"endpoint", r.endpoint, "action", LegacyActionRetain, "new", ActionRetain)
			})
		}
		switch {
		case a.Prefetch != nil:
			if a.Prefetch.ExpiresAtMs != 0 && a.Prefetch.ExpiresAtMs <= now {
				c.Expired.Inc()
				continue
			}
			if r.otherWorkers(a.Prefetch) { // worker_filter.go
				continue
			}
		case a.Retain != nil:
			if a.Retain.ExpiresAtMs <= now {
				c.Expired.Inc()
				continue
			}
		case a.Pin == nil:
			c.UnknownAction.Inc()
			continue
		case !r.revs.apply(a.Pin.Slot, a.Pin.Revision):
			// Overtaken: a newer pin, renewal or release of the slot was
			// applied already (docs/wire.md, pin revisions).
			c.Stale.Inc()
			continue
		}
		c.Delivered.Inc(a.Type)
		r.handler(ctx, Hint{Endpoint: r.endpoint, MessageID: env.MessageID, Action: a})
	}
}
