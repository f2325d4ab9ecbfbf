package zmqsend

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"errors"
	"github.com/hintstream/hintstream/actions"
	zmq "github.com/pebbe/zmq4"
)

// Pool delivers hints to ZeroMQ PULL endpoints. It creates one sender per
// endpoint on first use: a goroutine that alone owns a PUSH socket and
// reads a bounded queue. A slow or absent peer fills only its own queue.
//
// A Pool is safe for concurrent use. Close it to release its goroutines
// and sockets.
type Pool struct {
	opts poolOptions
	zctx *zmq.Context // the pool's own, terminated by Close
	err  error        // the ZMQ context could not be created
	cerr error        // CURVE was requested but cannot work

	mu      sync.RWMutex
	senders map[string]*sender
	stats   map[string]*counters
	closed  bool
	wg      sync.WaitGroup
	settle  *settler // nil: Done(true) at once (WithSettleDelay(0))

	// The socket budget (budget.go): budgeted counts the open senders of
	// endpoints not kept (under mu); quit ends reapIdle, which closes
	// reaped (nil without WithIdleClose).
	budgeted            int
	evicted, idleClosed atomic.Uint64
	quit, reaped        chan struct{}
	started             bool // startLocked ran (under mu)
}

// PoolOption configures a Pool.
type PoolOption func(*poolOptions)

type poolOptions struct {
	queueSize   int
	logger      *slog.Logger
	sendTimeout time.Duration
	linger      time.Duration
	curve       curveOptions
	onSent      func(endpoint string, latency time.Duration)
	maxHeld     int
	settleDelay time.Duration

	maxEndpoints int
	idleClose    time.Duration
	keep         map[string]bool

	errs []error // invalid option values, NewPool's error
}

// ErrInvalidOption: an option was given a value it cannot take. NewPool
// returns it, wrapped with the value, rather than ignore the value.
var ErrInvalidOption = errors.New("zmqsend: invalid option")

func (o *poolOptions) invalid(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
}

// Defaults of a Pool's per-endpoint queue and held triggers.
const (
	// DefaultQueueSize is each endpoint's queue (WithQueueSize).
	DefaultQueueSize = 1024
	// DefaultMaxHeld bounds each endpoint's held triggers (WithMaxHeld).
	DefaultMaxHeld = 64
	// NoMaxHeld lifts that bound (WithMaxHeld(NoMaxHeld)).
	NoMaxHeld = 0
)

// WithMaxHeld bounds the hints per endpoint whose Done is still to come
// (default DefaultMaxHeld; NoMaxHeld: no bound). A consumer acks its trigger in Done, so
// every waiting hint holds one of its consumer's MaxAckPending slots: a
// backed-up endpoint with a 1,024-hint queue could hold them all and
// stall every other endpoint's triggers behind it. Past the bound, Send
// calls Done(false) as soon as the hint is queued (the hint itself still
// goes out if it can): those triggers are released, at the price that a
// crash before the hint leaves loses it. EndpointStats.Released counts
// them.
func WithMaxHeld(n int) PoolOption {
	return func(o *poolOptions) {
		if n < 0 {
			o.invalid("max held %d below 0", n)
			return
		}
		o.maxHeld = n
	}
}

// WithSentHook calls f for every hint sent, with the time from Send to
// ZMQ accepting it (retries included), from the endpoint's sender
// goroutine: f must be quick and safe for concurrent use. For latency
// histograms.
func WithSentHook(f func(endpoint string, latency time.Duration)) PoolOption {
	return func(o *poolOptions) { o.onSent = f }
}

// WithQueueSize bounds each endpoint's queue (default DefaultQueueSize). Send fails
// with actions.ErrQueueFull beyond it. It must be at least 1.
func WithQueueSize(n int) PoolOption {
	return func(o *poolOptions) {
		if n < 1 {
			o.invalid("queue size %d below 1", n)
			return
		}
		o.queueSize = n
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) PoolOption {
	return func(o *poolOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// DefaultSendTimeout is every socket's ZMQ_SNDTIMEO: how long one send
// attempt may block before it is retried with backoff. It also bounds how
// long Remove and an expired Close wait for a sender to stop. Not an
// option: nothing needed another value (WithSendTimeout had no caller).
const DefaultSendTimeout = 100 * time.Millisecond

// DefaultLinger is ZMQ_LINGER of a socket closed by a completed Close: how
// long it keeps trying to write what ZMQ has already accepted. Sockets
// closed by Remove or an expired Close linger 0. Not an option, as
// DefaultSendTimeout.
const DefaultLinger = 100 * time.Millisecond

// NewPool returns an empty pool, or an error wrapping ErrInvalidOption
// for an option value it cannot take. No goroutine starts until the first
// Send. If the ZMQ context cannot be created, or CURVE was requested
// (WithCurve) but cannot work, the pool is still returned and every Send
// returns that error; Err reports it at once.
func NewPool(opts ...PoolOption) (*Pool, error) {
	o := poolOptions{
		queueSize:   DefaultQueueSize,
		logger:      slog.Default(),
		sendTimeout: DefaultSendTimeout,
		linger:      DefaultLinger,
		maxHeld:     DefaultMaxHeld,
		settleDelay: DefaultSettleDelay,

		maxEndpoints: DefaultMaxEndpoints,
		idleClose:    DefaultIdleClose,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	p := &Pool{
		opts:    o,
		senders: make(map[string]*sender),
		stats:   make(map[string]*counters),
	}
	p.zctx, p.err = zmq.NewContext()
	if p.err == nil {
		p.err = p.sizeContext()
	}
	p.quit = make(chan struct{})
	p.cerr = p.opts.curve.resolve()
	if o.settleDelay > 0 {
		p.settle = newSettler(o.settleDelay)
	}
	return p, nil
}

// startLocked starts the pool's own goroutines (idle reaping, settling)
// with its first sender; under p.mu (write).
func (p *Pool) startLocked() {
	if p.started {
		return
	}
	p.started = true
	if p.opts.idleClose > 0 {
		p.reaped = make(chan struct{})
		go p.reapIdle()
	}
	p.settle.start()
}

// Err returns the error that makes every Send fail, or nil: the ZMQ
// context could not be created, or CURVE is unusable (ErrCurveUnsupported,
// ErrCurveKey). Check it after NewPool to fail at start-up.
func (p *Pool) Err() error {
	if p.err != nil {
		return fmt.Errorf("zmqsend: zmq context: %w", p.err)
	}
	return p.cerr
}

// Send enqueues h for endpoint (for example "tcp://10.0.0.7:5570") and
// returns at once; it never waits for the network. It fails with
// actions.ErrExpired when h.Deadline has passed or is zero, actions.ErrQueueFull when the
// endpoint's queue is full, actions.ErrClosed after Close, actions.ErrInvalidHint for an
// empty body and actions.ErrEndpoint when the endpoint cannot be connected (also
// with ErrCurveKey when WithCurve gave it a malformed key). The
// first two count as dropped hints. When nothing is pending for the
// endpoint and its peer takes the hint without waiting, Send sends it
// itself; otherwise the endpoint's sender goroutine delivers it. Either
// way h.Done(true) follows by the settle delay (WithSettleDelay). Hints to one endpoint go out in the
// order Send accepted them.
func (p *Pool) Send(endpoint string, h actions.Hint) error {
	if len(h.Body) == 0 {
		return fmt.Errorf("%w: hint %q has no body", actions.ErrInvalidHint, h.MessageID)
	}
	if !time.Now().Before(h.Deadline) {
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.countersLocked(endpoint).drop(actions.DropExpired)
		}
		p.mu.Unlock()
		if closed {
			return actions.ErrClosed
		}
		return fmt.Errorf("%w: hint %q deadline %v", actions.ErrExpired, h.MessageID, h.Deadline)
	}
	p.mu.RLock()
	s, closed := p.senders[endpoint], p.closed
	if s != nil && !closed {
		err := p.enqueue(s, h)
		p.mu.RUnlock()
		return err
	}
	p.mu.RUnlock()
	if closed {
		return actions.ErrClosed
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return actions.ErrClosed
	}
	if s = p.senders[endpoint]; s == nil {
		if err := p.Err(); err != nil {
			return err
		}
		if err := p.makeRoomLocked(endpoint); err != nil {
			p.countersLocked(endpoint).drop(actions.DropBudget)
			return err
		}
		p.startLocked()
		var err error
		if s, err = newSender(p.zctx, endpoint, &p.opts, p.countersLocked(endpoint)); err != nil {
			return p.newSenderFailed(endpoint, err)
		}
		p.senders[endpoint] = s
		if !s.keep {
			p.budgeted++
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			s.run()
		}()
	}
	return p.enqueue(s, h)
}

// enqueue runs under p.mu (read or write), so it cannot race with Remove
// or Close deciding that a queue is final.
func (p *Pool) enqueue(s *sender, h actions.Hint) error {
	h.Done = p.settle.wrap(h.Done)
	q := queued{Hint: h, at: time.Now()}
	s.lastUsed.Store(q.at.UnixNano())
	if s.trySendNow(q) {
		return nil
	}
	var release func(bool)
	if done := h.Done; done != nil && p.opts.maxHeld > 0 {
		if s.held.Load() >= int64(p.opts.maxHeld) {
			release, h.Done = done, nil
		} else {
			s.held.Add(1)
			h.Done = func(sent bool) {
				s.held.Add(-1)
				done(sent)
			}
		}
	}
	q.Hint = h
	s.pending.Add(1)
	select {
	case s.queue <- q:
		if release != nil {
			s.stats.released.Add(1)
			release(false)
		}
		return nil
	default:
		s.pending.Add(-1)
		if release == nil && h.Done != nil && p.opts.maxHeld > 0 {
			s.held.Add(-1)
		}
		s.stats.drop(actions.DropQueueFull)
		return fmt.Errorf("%w: %s holds %d hints", actions.ErrQueueFull, s.endpoint, cap(s.queue))
	}
}

func (p *Pool) countersLocked(endpoint string) *counters {
	c := p.stats[endpoint]
	if c == nil {
		c = new(counters)
		p.stats[endpoint] = c
	}
	return c
}

// Remove closes endpoint's sender, typically when its worker leaves the
// registry: hints still queued are dropped (counted "removed") and the
// socket is closed before Remove returns, which takes at most one send
// timeout. Its stats stay. A later Send creates a new sender.
func (p *Pool) Remove(endpoint string) {
	p.mu.Lock()
	s := p.deleteLocked(endpoint)
	p.mu.Unlock()
	if s == nil {
		return
	}
	s.stop(actions.DropRemoved)
	<-s.done
}

// Endpoints returns the endpoints with an open sender, sorted.
func (p *Pool) Endpoints() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.senders))
	for ep := range p.senders {
		out = append(out, ep)
	}
	slices.Sort(out)
	return out
}

// Close stops accepting hints, keeps delivering the queued ones that have
// not expired until they are sent or ctx is done, then drops the rest
// (counted "closed"), closes every socket and waits for every goroutine.
// It returns ctx.Err() if ctx ended the flush. Calling it again waits for
// the first call and returns nil.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.quit)
	reaped := p.reaped
	senders := make([]*sender, 0, len(p.senders))
	for _, s := range p.senders {
		senders = append(senders, s)
		close(s.drain)
	}
	p.mu.Unlock()

	flushed := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(flushed)
	}()
	var err error
	select {
	case <-flushed:
	case <-ctx.Done():
		err = ctx.Err()
		for _, s := range senders {
			s.stop(actions.DropClosed)
		}
		<-flushed
	}
	if reaped != nil {
		<-reaped
	}
	p.settle.close()
	if p.zctx != nil {
		if terr := p.zctx.Term(); terr != nil && err == nil {
			err = fmt.Errorf("zmqsend: terminate zmq context: %w", terr)
		}
	}
	return err
}

// EndpointStats counts what happened to one endpoint's hints since the
// pool first saw it. Sent counts hints ZMQ accepted (delivery to the
// worker is not acknowledged); Retried counts send attempts repeated after
// EAGAIN; Dropped holds the non-zero counts by reason (Drop* constants).
//
// Latency* describe the sent hints only: the time from Send enqueuing a
// hint to ZMQ accepting it, which includes queueing behind other hints and
// retries while the peer is absent. LatencySum/LatencyCount is the mean.
type EndpointStats struct {
	Sent       uint64
	Retried    uint64
	Released   uint64 // hints whose Done ran at Send, past WithMaxHeld
	Inline     uint64 // of Sent, those Send sent itself (the endpoint was idle)
	Dropped    map[string]uint64
	QueueDepth int

	LatencyCount uint64
	LatencySum   time.Duration
	LatencyMax   time.Duration
}

// LogValue logs s as a group with snake_case keys and durations as
// strings ("1.5ms"), not nanosecond integers.
func (s EndpointStats) LogValue() slog.Value {
	dropped := make([]slog.Attr, 0, len(s.Dropped))
	for _, reason := range slices.Sorted(maps.Keys(s.Dropped)) {
		dropped = append(dropped, slog.Uint64(reason, s.Dropped[reason]))
	}
	var mean time.Duration
	if s.LatencyCount > 0 {
		mean = s.LatencySum / time.Duration(s.LatencyCount)
	}
	return slog.GroupValue(
		slog.Uint64("sent", s.Sent), slog.Uint64("retried", s.Retried), slog.Uint64("released", s.Released),
		slog.Uint64("inline", s.Inline), slog.Attr{Key: "dropped", Value: slog.GroupValue(dropped...)},
		slog.Int("queue_depth", s.QueueDepth), slog.Uint64("latency_count", s.LatencyCount),
		slog.String("latency_mean", mean.String()), slog.String("latency_max", s.LatencyMax.String()))
}

// Stats returns a snapshot for every endpoint the pool has seen, removed
// ones included.
func (p *Pool) Stats() map[string]EndpointStats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]EndpointStats, len(p.stats))
	for ep, c := range p.stats {
		st := EndpointStats{
			Sent:     c.sent.Load(),
			Retried:  c.retried.Load(),
			Released: c.released.Load(),
			Inline:   c.inline.Load(),
			Dropped:  make(map[string]uint64),

			LatencyCount: c.latCount.Load(),
			LatencySum:   time.Duration(c.latSum.Load()),
			LatencyMax:   time.Duration(c.latMax.Load()),
		}
		for i, r := range dropReasons {
			if n := c.dropped[i].Load(); n > 0 {
				st.Dropped[r] = n
			}
		}
		if s := p.senders[ep]; s != nil {
			st.QueueDepth = len(s.queue)
		}
		out[ep] = st
	}
	return out
}
