package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/observe/metrics"
)

// Defaults of GroupConfig.
const (
	// DefaultObservationSubject is the core NATS subject members publish
	// their planner observations on.
	DefaultObservationSubject = "hintstream.retention.observations"
	// DefaultFlushEvery bounds how long an observation waits in its
	// member's batch.
	DefaultFlushEvery = 100 * time.Millisecond
	// DefaultMaxBatchBytes cuts a batch at about this size (NATS's default
	// max payload is 1 MiB).
	DefaultMaxBatchBytes = 256 << 10
	// DefaultMaxQueued bounds the observations waiting to be batched; more
	// are dropped and counted.
	DefaultMaxQueued = 4096
	// DefaultMaxPendingBatches bounds the batches received and not yet
	// applied; the connection drops more and they are counted.
	DefaultMaxPendingBatches = 1024
)

// GroupConfig configures a Group.
type GroupConfig struct {
	// Elector: member name, lock key, TTL and renewal (Logger and
	// OnChange are the Group's).
	Elector ElectorConfig
	// Bucket is the lock's KV bucket (default DefaultLeaderBucket).
	Bucket string
	// Subject of the observation batches (default
	// DefaultObservationSubject).
	Subject string
	// FlushEvery, MaxBatchBytes, MaxQueued and MaxPendingBatches: see
	// their Default* constants.
	FlushEvery        time.Duration
	MaxBatchBytes     int
	MaxQueued         int
	MaxPendingBatches int
}

// WithDefaults fills zero fields.
func (c GroupConfig) WithDefaults() GroupConfig {
	c.Elector = c.Elector.withDefaults()
	if c.Subject == "" {
		c.Subject = DefaultObservationSubject
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.MaxPendingBatches == 0 {
		c.MaxPendingBatches = DefaultMaxPendingBatches
	}
	return c
}

// Validate checks a GroupConfig after WithDefaults.
func (c GroupConfig) Validate() error {
	if err := c.Elector.validate(); err != nil {
		return err
	}
	switch {
	case c.FlushEvery <= 0:
		return fmt.Errorf("%w: observation flush every %v", ErrInvalidOption, c.FlushEvery)
	case c.MaxBatchBytes < 1024:
		return fmt.Errorf("%w: observation batch of %d bytes (want at least 1024)", ErrInvalidOption, c.MaxBatchBytes)
	case c.MaxQueued <= 0 || c.MaxPendingBatches <= 0:
		return fmt.Errorf("%w: %d observations queued, %d batches pending", ErrInvalidOption, c.MaxQueued, c.MaxPendingBatches)
	}
	return nil
}

// GroupDeps are what a Group works with.
type GroupDeps struct {
	Conn *nats.Conn
	// Lock is the lock bucket (OpenLeaderBucket).
	Lock jetstream.KeyValue
	// Apply gives the local planner an observation another member made.
	// It is called from Run's goroutine.
	Apply func(Observation)
	// OnChange is told of leadership changes (from the elector's
	// goroutine): a member that starts leading plans at once from what
	// it has seen.
	OnChange func(Leadership)
	// DeadLetter, if set, keeps a copy of a batch that did not decode,
	// with its reason.
	DeadLetter func(reason string, m *nats.Msg)
	Counters   *metrics.RetentionGroup
	Logger     *slog.Logger
}

// Group makes one planner decide for a consumer group. Every member
// observes its share of the requests and publishes what its planner
// learns (Observation) on a core NATS subject; every member applies the
// others' observations, so each planner sees the whole group's traffic;
// and one member, the holder of a KV lock (Elector), sends the plans. The
// others plan too, in the shadow, so a member that takes over starts from
// the group's estimates.
type Group struct {
	cfg   GroupConfig
	deps  GroupDeps
	el    *Elector
	queue chan Observation
	tried chan struct{}
	once  sync.Once
}

// NewGroup returns a Group; Run takes part.
func NewGroup(cfg GroupConfig, deps GroupDeps) (*Group, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Conn == nil || deps.Lock == nil || deps.Apply == nil || deps.Counters == nil {
		return nil, fmt.Errorf("%w: a group needs a connection, a lock bucket, an apply function and counters", ErrInvalidOption)
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Group{cfg: cfg, deps: deps, queue: make(chan Observation, cfg.MaxQueued),
		tried: make(chan struct{})}
	ecfg := cfg.Elector
	ecfg.Logger = deps.Logger
	ecfg.OnChange = g.onChange
	el, err := NewElector(deps.Lock, ecfg)
	if err != nil {
		return nil, err
	}
	g.el = el
	return g, nil
}

// Member is this member's name.
func (g *Group) Member() string { return g.cfg.Elector.Member }

// Leading reports whether this member sends the group's plans now.
func (g *Group) Leading() bool { return g.el.Leading() }

// State is what this member knows of the lock.
func (g *Group) State() Leadership { return g.el.State() }

// Tried is closed once this member has made its first attempt at the
// lock, or Run has returned.
func (g *Group) Tried() <-chan struct{} { return g.tried }

// SawOther reports whether another member led while this one ran.
func (g *Group) SawOther() bool { return g.el.SawOther() }

func (g *Group) onChange(l Leadership) {
	if l.Leading {
		g.deps.Counters.Leader.Set(1)
		g.deps.Counters.Takeovers.Inc()
	} else {
		g.deps.Counters.Leader.Set(0)
	}
	if g.deps.OnChange != nil {
		g.deps.OnChange(l)
	}
}

// Publish queues o for the group; it never blocks (a full queue drops o,
// counted: a lost observation only loosens the leader's estimates).
func (g *Group) Publish(o Observation) {
	select {
	case g.queue <- o:
	default:
		g.deps.Counters.Dropped.Inc("queue_full")
	}
}

// Run takes part in the group until ctx ends: it subscribes to the
// observation subject, runs the election, batches and publishes this
// member's observations and applies the others'. On return it has
// flushed what was queued, stepped down if it led, and unsubscribed.
func (g *Group) Run(ctx context.Context) error {
	in := make(chan *nats.Msg, g.cfg.MaxPendingBatches)
	sub, err := g.deps.Conn.ChanSubscribe(g.cfg.Subject, in)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", g.cfg.Subject, err)
	}
	// The channel's capacity is the pending limit: the connection drops
	// what does not fit and counts it (Dropped).
	defer g.once.Do(func() { close(g.tried) })
	var wg sync.WaitGroup
	ectx, stopElector := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = g.el.Run(ectx)
	}()
	defer func() {
		stopElector()
		wg.Wait()
		_ = sub.Unsubscribe()
	}()

	tick := time.NewTicker(g.cfg.FlushEvery)
	defer tick.Stop()
	elTried := g.el.Tried()
	var (
		batch   []Observation
		size    int
		dropped int
	)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		g.publish(batch)
		batch, size = batch[:0], 0
	}
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case o := <-g.queue:
					batch = append(batch, o)
					continue
				default:
				}
				break
			}
			flush()
			return nil
		case o := <-g.queue:
			batch = append(batch, o)
			if size += o.size(); size >= g.cfg.MaxBatchBytes {
				flush()
			}
		case <-tick.C:
			flush()
			if d, err := sub.Dropped(); err == nil && d > dropped {
				g.deps.Counters.Dropped.Add("slow_consumer", uint64(d-dropped))
				dropped = d
			}
		case m := <-in:
			g.receive(m)
		case <-elTried:
			g.once.Do(func() { close(g.tried) })
			elTried = nil
		}
	}
}

// publish sends batch, split where it would pass MaxBatchBytes.
func (g *Group) publish(batch []Observation) {
	for len(batch) > 0 {
		n, size := 0, 0
		for n < len(batch) && (n == 0 || size+batch[n].size() <= g.cfg.MaxBatchBytes) {
			size += batch[n].size()
			n++
		}
		data, err := EncodeBatch(g.Member(), batch[:n])
		if err == nil {
			err = g.deps.Conn.Publish(g.cfg.Subject, data)
		}
		if err != nil {
			g.deps.Counters.Dropped.Add("publish", uint64(n))
			if !errors.Is(err, nats.ErrConnectionClosed) {
				g.deps.Logger.Warn("retention observations not published", "count", n, "err", err)
			}
		} else {
			g.deps.Counters.Forwarded.Add(uint64(n))
		}
		batch = batch[n:]
	}
}

// receive applies another member's batch; this member's own batches come
// back too and are skipped (it applied them as it made them).
func (g *Group) receive(m *nats.Msg) {
	b, err := DecodeBatch(m.Data)
	if err != nil {
		g.deps.Counters.Dropped.Inc("malformed")
		g.deps.Logger.Warn("retention observation batch dropped", "reason", batchReason(err), "err", err)
		if g.deps.DeadLetter != nil {
			g.deps.DeadLetter(batchReason(err), m)
		}
		return
	}
	if b.Member == g.Member() {
		return
	}
	for _, o := range b.Observations {
		g.deps.Apply(o)
	}
	g.deps.Counters.Received.Add(uint64(len(b.Observations)))
}

func batchReason(err error) string {
	var be *BatchError
	if errors.As(err, &be) {
		return be.Reason
	}
	return "json"
}
