package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/metrics"
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
}

// StateConsumer reads a state stream from its first message, in order,
// with an ordered consumer.
type StateConsumer struct {
	js       jetstream.JetStream
	cfg      StateConfig
	apply    ApplyFunc
	dlq      *DeadLetter
	counters *metrics.Counters
	log      *slog.Logger

	applied atomic.Uint64 // last stream sequence handled

	mu sync.Mutex
	cc jetstream.ConsumeContext
}

// NewStateConsumer wires a consumer; Start begins consuming.
func NewStateConsumer(js jetstream.JetStream, cfg StateConfig, apply ApplyFunc,
	dlq *DeadLetter, counters *metrics.Counters, log *slog.Logger) *StateConsumer {
	if log == nil {
		log = slog.Default()
	}
	return &StateConsumer{js: js, cfg: cfg, apply: apply, dlq: dlq, counters: counters,
		log: log.With("consumer", cfg.Kind)}
}

// Start begins consuming from the start of the stream.
func (c *StateConsumer) Start(ctx context.Context) error {
	cons, err := c.js.OrderedConsumer(ctx, c.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: c.cfg.Filter,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("%s consumer on %s: %w", c.cfg.Kind, c.cfg.Stream, err)
	}
	h, err := cons.Consume(c.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.log.Warn("consume", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("%s consumer: %w", c.cfg.Kind, err)
	}
	c.mu.Lock()
	c.cc = h
	c.mu.Unlock()
	return nil
}

// Stop stops consuming and waits for the handler to return.
func (c *StateConsumer) Stop() {
	c.mu.Lock()
	h := c.cc
	c.cc = nil
	c.mu.Unlock()
	if h == nil {
		return
	}
	h.Stop()
	<-h.Closed()
}

// Applied returns the stream sequence of the last message handled.
func (c *StateConsumer) Applied() uint64 { return c.applied.Load() }

// WaitCaughtUp waits until the last message matching the filter at the
// time of the call has been handled.
func (c *StateConsumer) WaitCaughtUp(ctx context.Context) error {
	target, err := c.lastSeq(ctx)
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for c.applied.Load() < target {
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

func (c *StateConsumer) handle(msg jetstream.Msg) {
	c.counters.Inc(c.cfg.Kind + ".received")
	if md, err := msg.Metadata(); err == nil {
		defer c.applied.Store(md.Sequence.Stream)
	}
	err := c.apply(msg)
	if err == nil {
		return
	}
	var de *schemas.DecodeError
	if !errors.As(err, &de) {
		c.counters.IncLabel(c.cfg.Kind+".apply_errors", err.Error())
		c.log.Debug("not applied", "subject", msg.Subject(), "err", err)
		return
	}
	c.counters.IncLabel(c.cfg.Kind+".malformed", de.Reason)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if dErr := c.dlq.Publish(ctx, c.cfg.Kind, de.Reason, msg); dErr != nil {
		c.counters.Inc(c.cfg.Kind + ".dead_letter_errors")
		c.log.Error("dead-letter failed", "err", dErr)
	}
	c.log.Warn("malformed state event skipped", "subject", msg.Subject(), "reason", de.Reason, "err", err)
}
