package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// ApplyFunc applies one state message. An error matching
// schemas.ErrMalformed dead-letters the message; any other error is
// counted and logged, and the message is skipped (state streams are read
// in order and cannot be retried one message at a time).
type ApplyFunc func(msg jetstream.Msg) error

// StateConfig configures a StateConsumer.
type StateConfig struct {
	Kind   string   // "kv_events" or "load": metric prefix and dead-letter kind
	Stream string   // required
	Filter []string // default: the whole stream
	// StartSeq starts at this stream sequence instead of the first (after
	// loading a snapshot that covers everything before it).
	StartSeq uint64
	// Shards applies messages of different subjects in parallel on this
	// many goroutines, keeping each subject's messages in order (subjects
	// name their publisher: kv.events.<worker_id>). Default 1: in order,
	// on the consumer's own goroutine. At most runtime.GOMAXPROCS(0) are
	// started: more goroutines than processors add no parallelism, only a
	// hand-off and a wake-up per message (measured: on 2 cores, 4 shards
	// cost more CPU per event than 2).
	Shards int
}

// StateConsumer reads a state stream from its first message, in order,
// with an ordered consumer.
type StateConsumer struct {
	js       jetstream.JetStream
	cfg      StateConfig
	apply    ApplyFunc
	dlq      *DeadLetter
	counters *metrics.Families
	log      *slog.Logger
	received *metrics.Counter // looked up once: it is bumped per message
	st       metrics.State

	// dispatched is the last stream sequence applied or handed to a
	// shard. Only dispatch writes it, and only dispatch writes a shard's
	// handed count, only the shard its done count, each on its own cache
	// line: one counter that both sides wrote moved between the cores on
	// every message.
	dispatched paddedUint64
	handed     []paddedUint64 // messages handed to each shard
	done       []paddedUint64 // messages each shard has applied

	mu     sync.Mutex
	cc     jetstream.ConsumeContext
	shards []chan jetstream.Msg
	closed bool // Stop has begun: no new consume context
	// shardsClosed: the shard queues are closed; dispatch drops.
	shardsClosed bool
	wg           sync.WaitGroup

	// streamCreated identifies the stream being read: one deleted and
	// created again restarts its sequences, which an ordered consumer
	// (resuming after the last sequence it saw) would skip.
	streamCreated time.Time
	// created is streamCreated for other goroutines (StreamCreated):
	// set before the new stream's first message can be applied, so a
	// sequence from Applied is never paired with the old stream.
	created   atomic.Int64
	resetting atomic.Bool
	stopping  chan struct{} // closed by Stop
	stopOnce  sync.Once
	resets    sync.WaitGroup

	// ctx is the consumer's context (Start's, without its deadline),
	// cancelled once Stop has drained; operation timeouts derive from it.
	ctx    context.Context
	cancel context.CancelFunc
}

// NewStateConsumer wires a consumer; Start begins consuming.
func NewStateConsumer(js jetstream.JetStream, cfg StateConfig, apply ApplyFunc,
	dlq *DeadLetter, counters *metrics.Families, log *slog.Logger) *StateConsumer {
	if log == nil {
		log = slog.Default()
	}
	return &StateConsumer{js: js, cfg: cfg, apply: apply, dlq: dlq, counters: counters,
		log: log.With("consumer", cfg.Kind), received: counters.State(cfg.Kind).Received, st: counters.State(cfg.Kind)}
}

// paddedUint64 fills a cache line, so that no other counter shares it.
type paddedUint64 struct {
	atomic.Uint64
	_ [56]byte
}

// shardQueue bounds each shard's backlog; a full queue makes the consumer
// wait, which is the back-pressure JetStream expects.
const shardQueue = 1024

// Start begins consuming from the start of the stream.
func (c *StateConsumer) Start(ctx context.Context) error {
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: c.cfg.Filter, DeliverPolicy: jetstream.DeliverAllPolicy}
	if c.cfg.StartSeq > 0 {
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, c.cfg.StartSeq
		// Everything before StartSeq counts as applied: with no tail to
		// replay, the consumer is caught up at once.
		c.dispatched.Store(c.cfg.StartSeq - 1)
	}
	st, err := c.js.Stream(ctx, c.cfg.Stream)
	if err != nil {
		return fmt.Errorf("%s consumer on %s: %w", c.cfg.Kind, c.cfg.Stream, err)
	}
	c.streamCreated = st.CachedInfo().Created
	c.created.Store(c.streamCreated.UnixNano())
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.stopping = make(chan struct{})
	if n := min(c.cfg.Shards, runtime.GOMAXPROCS(0)); n > 1 {
		c.shards = make([]chan jetstream.Msg, n)
		c.handed, c.done = make([]paddedUint64, n), make([]paddedUint64, n)
		for i := range c.shards {
			ch := make(chan jetstream.Msg, shardQueue)
			c.shards[i] = ch
			done := &c.done[i]
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				for m := range ch {
					c.process(m)
					done.Add(1)
				}
			}()
		}
	}
	return c.consume(ctx, occ)
}

func (c *StateConsumer) consume(ctx context.Context, occ jetstream.OrderedConsumerConfig) error {
	cons, err := c.js.OrderedConsumer(ctx, c.cfg.Stream, occ)
	if err != nil {
		return fmt.Errorf("%s consumer on %s: %w", c.cfg.Kind, c.cfg.Stream, err)
	}
	h, err := cons.Consume(c.dispatch, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
			errors.Is(err, jetstream.ErrStreamNotFound) {
			// Usually a server restart (nats.go recreates the consumer),
			// but it may be the stream itself that went.
			c.log.Debug("consume", "err", err)
			c.checkRecreated()
			return
		}
		c.log.Warn("consume", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("%s consumer: %w", c.cfg.Kind, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		h.Stop()
		return errors.New("stopped")
	}
	c.cc = h
	return nil
}

// checkRecreated starts (once at a time) a watch for the stream coming
// back as a new stream.
func (c *StateConsumer) checkRecreated() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.resetting.CompareAndSwap(false, true) {
		return
	}
	c.resets.Add(1)
	go c.watchRecreated()
}

// watchRecreated waits until the stream exists; if it is a new one, the
// consumer starts over from its first message.
func (c *StateConsumer) watchRecreated() {
	defer c.resets.Done()
	defer c.resetting.Store(false)
	wait := retry.Doubling(50*time.Millisecond, time.Second)
	for {
		select {
		case <-c.stopping:
			return
		case <-time.After(wait.NextBackOff()):
		}
		ctx, cancel := opContext(c.ctx)
		st, err := c.js.Stream(ctx, c.cfg.Stream)
		cancel()
		if err != nil {
			continue // absent (or unreachable) yet
		}
		created := st.CachedInfo().Created
		if created.Equal(c.streamCreated) {
			return // the same stream: nats.go carries on by itself
		}
		if c.restart(created) {
			return
		}
	}
}

// restart replaces the ordered consumer by one reading the new stream
// from its start.
func (c *StateConsumer) restart(created time.Time) bool {
	c.stopConsume()
	c.dispatched.Store(0)
	ctx, cancel := opContext(c.ctx)
	defer cancel()
	c.created.Store(created.UnixNano())
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: c.cfg.Filter, DeliverPolicy: jetstream.DeliverAllPolicy}
	if err := c.consume(ctx, occ); err != nil {
		c.created.Store(c.streamCreated.UnixNano())
		c.log.Debug("not restarted yet", "err", err)
		return false
	}
	c.streamCreated = created
	c.log.Info("the stream was recreated; reading it from its first message", "stream", c.cfg.Stream)
	return true
}

// stopConsume stops the ordered consumer, if any, and waits until its
// callback has returned.
func (c *StateConsumer) stopConsume() {
	c.mu.Lock()
	h := c.cc
	c.cc = nil
	c.mu.Unlock()
	if h != nil {
		h.Stop()
		<-h.Closed()
	}
}

// Stop stops consuming and waits until every dispatched message has been
// applied.
func (c *StateConsumer) Stop() {
	if c.stopping != nil {
		c.stopOnce.Do(func() { close(c.stopping) })
	}
	c.mu.Lock()
	c.closed = true // no new consumer from a watch
	c.mu.Unlock()
	c.resets.Wait()
	c.stopConsume()
	c.mu.Lock()
	if !c.shardsClosed {
		c.shardsClosed = true
		for _, ch := range c.shards {
			close(ch)
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
	if c.cancel != nil {
		c.cancel() // drained: nothing of this consumer runs any more
	}
}

// StreamCreated is the creation time of the stream being read, which
// tells one incarnation of a stream name from another: read it before
// Applied, and a sequence from Applied belongs to it or to a later one.
func (c *StateConsumer) StreamCreated() time.Time { return time.Unix(0, c.created.Load()).UTC() }

// Applied returns the stream sequence up to which every message has been
// applied.
func (c *StateConsumer) Applied() uint64 {
	seq := c.dispatched.Load() // first: every message up to it was handed
	if !c.drained() {
		return 0
	}
	return seq
}

// drained reports whether every shard has applied all it was handed
// before the call. A shard applies in order, so done >= handed read
// before it means those were applied.
func (c *StateConsumer) drained() bool {
	for i := range c.handed {
		if c.done[i].Load() < c.handed[i].Load() {
			return false
		}
	}
	return true
}

// WaitCaughtUp waits until the last message matching the filter at the
// time of the call has been handled.
func (c *StateConsumer) WaitCaughtUp(ctx context.Context) error {
	target, err := c.lastSeq(ctx)
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for c.dispatched.Load() < target || !c.drained() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func (c *StateConsumer) lastSeq(ctx context.Context) (uint64, error) {
	s, err := c.js.Stream(ctx, c.cfg.Stream)
	if err != nil {
		return 0, err
	}
	filters := c.cfg.Filter
	if len(filters) == 0 {
		info, err := s.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.LastSeq, nil
	}
	var last uint64
	for _, f := range filters {
		m, err := s.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}

// dispatch runs on the consumer's goroutine, in stream order.
func (c *StateConsumer) dispatch(msg jetstream.Msg) {
	seq := streamSeq(msg.Reply()) // msg.Metadata()'s, without allocating one
	// Counted here, on the one goroutine that receives, not in a shard.
	c.received.Inc()
	if len(c.shards) == 0 {
		c.process(msg)
		c.dispatched.Store(seq)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shardsClosed {
		return
	}
	i := shardOf(msg.Subject(), len(c.shards))
	c.handed[i].Store(c.handed[i].Load() + 1) // dispatch is its one writer
	c.dispatched.Store(seq)
	c.shards[i] <- msg
}

func shardOf(subject string, n int) int {
	// FNV-1a: cheap, and stable so a subject always lands on one shard.
	h := uint32(2166136261)
	for i := 0; i < len(subject); i++ {
		h ^= uint32(subject[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// process applies msg. A malformed event (a *schemas.DecodeError) is
// dead-lettered (deadLetter, middleware.go); any other error is an event
// the state could not take, counted and skipped.
func (c *StateConsumer) process(msg jetstream.Msg) {
	err := c.apply(msg)
	if err == nil {
		return
	}
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		c.deadLetter(msg, de, err)
		return
	}
	c.st.ApplyErrors.Inc()
	c.log.Debug("not applied", "subject", msg.Subject(), "err", err)
}
