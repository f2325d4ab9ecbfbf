package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// durable is the shared lifecycle of the trigger consumers: one durable
// pull consumer with explicit acks, shared by every member of a group.
type durable struct {
	js            jetstream.JetStream
	stream, name  string
	filter        []string
	deliverNew    bool
	ackWait       time.Duration
	maxAckPending int
	maxDeliver    int
	log           *slog.Logger

	// dlq receives messages that reached maxDeliver (nil: not watched).
	dlq      *DeadLetter
	dlqKind  string
	counters *metrics.Families

	// handled is the highest stream sequence handled: a recreated consumer
	// resumes after it, so nothing is skipped or done twice.
	handled atomic.Uint64
	// expiredTo is the last stream sequence reported as expired unread
	// (expired.go), so a range is counted once per member.
	expiredTo atomic.Uint64
	// streamCreated identifies the stream handled counts in: a stream
	// deleted and created again starts its sequences over, and is read
	// from its start instead.
	streamCreated time.Time

	// ctx is the component's context (from start, without its deadline),
	// cancelled once stop has drained: every operation's timeout derives
	// from it (streams.DefaultOpTimeout).
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	cc     jetstream.ConsumeContext
	handle func(jetstream.Msg)
	advSub *nats.Subscription
	lost   chan struct{} // the consumer may be gone: check and recreate
	// repull asks recover to consume afresh: a pull answered "no
	// responders" (503) leaves nats.go counting it as outstanding, so
	// no new pull goes out until two heartbeats are missed (5 s): nats.go
	// v1.55.0 jetstream/pull.go, handleStatusMsg returns the 503 to the
	// error handler without resetting the pending count.
	repull  atomic.Bool
	done    chan struct{}
	stopped chan struct{}
}

// Defaults of the trigger consumers (RequestConfig, ResponseConfig; the
// `run` flags take theirs from here).
const (
	DefaultRequestsDurable  = "hintstream-requests"
	DefaultResponsesDurable = "hintstream-responses"
	DefaultMaxAckPending    = 1024
	DefaultAckWait          = 30 * time.Second
	// DefaultMaxDeliver bounds redeliveries; past it the message is copied
	// to the dead-letter subject (see watchMaxDeliveries). MaxDeliver
	// Unbounded (-1) lifts the bound.
	DefaultMaxDeliver = 10
	// Unbounded is the MaxDeliver that lifts the bound (JetStream's -1).
	Unbounded = -1
	// DefaultRepullDelay is how long a consumer whose pull met no
	// responder waits before it consumes afresh.
	DefaultRepullDelay = 100 * time.Millisecond
)

// opContext is a streams.DefaultOpTimeout context derived from parent (nil: a
// component never started, as in tests that call a handler directly).
func opContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, streams.DefaultOpTimeout)
}

func (d *durable) config() jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:        d.name,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        d.ackWait,
		MaxAckPending:  d.maxAckPending,
		MaxDeliver:     d.maxDeliver,
		FilterSubjects: d.filter,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if d.deliverNew {
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	return cfg
}

// start attaches to the durable (creating it when absent) and consumes
// until stop. A consumer deleted while running is recreated, with one log
// line, without a restart.
// rej, when given, dead-letters under the consumer's context.
func (d *durable) start(ctx context.Context, handle func(jetstream.Msg), rej ...*rejecter) error {
	if d.maxAckPending <= 0 {
		d.maxAckPending = DefaultMaxAckPending
	}
	if d.ackWait <= 0 {
		d.ackWait = DefaultAckWait
	}
	if d.maxDeliver == 0 {
		d.maxDeliver = DefaultMaxDeliver
	}
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, r := range rej {
		r.ctx = d.ctx
	}
	d.handle = handle
	d.lost = make(chan struct{}, 1)
	d.done = make(chan struct{})
	d.stopped = make(chan struct{})
	if err := d.consume(ctx); err != nil {
		d.cancel()
		d.done = nil // not started: stop has nothing to wait for
		return err
	}
	if err := d.watchMaxDeliveries(); err != nil {
		d.stopConsume()
		d.cancel()
		d.done = nil
		return err
	}
	go d.supervise()
	return nil
}

func (d *durable) consume(ctx context.Context) error {
	st, err := d.js.Stream(ctx, d.stream)
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", d.name, d.stream, err)
	}
	created := st.CachedInfo().Created
	newStream := !d.streamCreated.IsZero() && !created.Equal(d.streamCreated)
	if newStream {
		// Sequences restarted with the stream: the old position means
		// nothing in it, and everything in it is new to us.
		d.handled.Store(0)
	}
	d.streamCreated = created
	cons, err := d.js.Consumer(ctx, d.stream, d.name)
	if err == nil && !newStream {
		d.checkExpired(st.CachedInfo(), cons.CachedInfo())
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cfg := d.config()
		if newStream {
			cfg.DeliverPolicy = jetstream.DeliverAllPolicy
		} else if last := d.handled.Load(); last > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
		}
		cons, err = d.js.CreateConsumer(ctx, d.stream, cfg)
		if err == nil && newStream {
			// Whoever recreated the stream said so; one line here is enough.
			d.log.Info("the stream was recreated; consuming it from its first message", "stream", d.stream)
		}
	}
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", d.name, d.stream, err)
	}
	h, err := cons.Consume(func(m jetstream.Msg) {
		d.handle(m)
		// streamSeq: Metadata's sequence (0 where it fails), no allocation.
		if seq := streamSeq(m.Reply()); seq > d.handled.Load() {
			d.handled.Store(seq)
		}
	},
		// Short pull requests (heartbeat: half of this): after a server
		// restart, a pull lost with the old server is noticed and renewed
		// within seconds, not the default 30 s.
		jetstream.PullExpiry(5*time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			// A pull can meet no responder while a just-created durable
			// (several members creating it at once) or a new consumer
			// leader is not yet serving it.
			noResponder := errors.Is(err, nats.ErrNoResponders)
			if noResponder {
				d.repull.Store(true)
			}
			if noResponder || errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
				errors.Is(err, jetstream.ErrNoHeartbeat) {
				select {
				case d.lost <- struct{}{}:
				default:
				}
				return
			}
			d.log.Warn("consume", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("consumer %s: %w", d.name, err)
	}
	d.mu.Lock()
	d.cc = h
	d.mu.Unlock()
	return nil
}

// supervise recreates the consumer when it was deleted (by an operator,
// or with its stream), retrying until stop.
func (d *durable) supervise() {
	defer close(d.stopped)
	for {
		select {
		case <-d.done:
			return
		case <-d.lost:
		}
		for !d.recover() {
			select {
			case <-d.done:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// recover reattaches to the durable, recreating it when it is gone; false
// means try again later.
func (d *durable) recover() bool {
	ctx, cancel := opContext(d.ctx)
	defer cancel()
	_, err := d.js.Consumer(ctx, d.stream, d.name)
	switch {
	case err == nil:
		d.mu.Lock()
		active := d.cc != nil
		d.mu.Unlock()
		if active && d.repull.Swap(false) {
			// Not at once: the consumer may need a moment to serve pulls.
			select {
			case <-d.done:
				return true
			case <-time.After(DefaultRepullDelay):
			}
			d.stopConsume()
			d.log.Debug("pull met no responder; consuming afresh")
			active = false
		}
		if active {
			return true // a heartbeat hiccup: nats.go carries on
		}
		// Another member recreated it while we were stopped: attach.
		err = d.consume(ctx)
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		d.stopConsume()
		before := d.streamCreated
		if err = d.consume(ctx); err == nil {
			d.counters.Trigger(d.dlqKind).ConsumerRecreated.Inc()
			if d.streamCreated.Equal(before) { // a new stream was logged by consume
				d.log.Warn("durable consumer was deleted; recreated it", "stream", d.stream,
					"resume_after_seq", d.handled.Load())
			}
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// Deleted with its stream: wait for the stream to come back.
		d.stopConsume()
	}
	if err != nil {
		d.log.Debug("consumer not recovered yet", "err", err)
		return false
	}
	return true
}

// watchMaxDeliveries copies a message that ran out of deliveries to the
// dead-letter subject: JetStream stops redelivering it and says so only
// in an advisory.
func (d *durable) watchMaxDeliveries() error {
	if d.dlq == nil {
		return nil
	}
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", d.stream, d.name)
	sub, err := d.js.Conn().Subscribe(subj, func(m *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if json.Unmarshal(m.Data, &adv) != nil || adv.StreamSeq == 0 {
			return
		}
		ctx, cancel := opContext(d.ctx)
		defer cancel()
		d.counters.Trigger(d.dlqKind).MaxDeliveries.Inc()
		if err := d.dlq.PublishStored(ctx, d.dlqKind, "max deliveries", d.stream, adv.StreamSeq); err != nil {
			d.log.Error("dead-letter of an undeliverable message failed", "stream_seq", adv.StreamSeq, "err", err)
			return
		}
		d.log.Warn("message ran out of deliveries; copied to the dead-letter subject",
			"stream_seq", adv.StreamSeq, "deliveries", adv.Deliveries)
	})
	if err != nil {
		return fmt.Errorf("watch max deliveries of %s: %w", d.name, err)
	}
	d.advSub = sub
	return nil
}

func (d *durable) stopConsume() {
	d.mu.Lock()
	h := d.cc
	d.cc = nil
	d.mu.Unlock()
	if h == nil {
		return
	}
	h.Drain()
	<-h.Closed()
}

// stop stops fetching and waits until the message in hand is finished.
func (d *durable) stop() {
	if d.done == nil {
		return
	}
	select {
	case <-d.done:
		return
	default:
	}
	close(d.done)
	<-d.stopped
	if d.advSub != nil {
		_ = d.advSub.Unsubscribe()
	}
	d.stopConsume()
	d.cancel() // drained: nothing of this consumer runs any more
}

// rejecter is what a trigger's settling and its dead-lettering
// middleware (deadLettering, middleware.go) need: the kind, the
// dead-letter publisher, the counters, the logger and the consumer's
// context.
type rejecter struct {
	kind     string // "requests", "responses"
	dlq      *DeadLetter
	counters *metrics.Families
	log      *slog.Logger
	ctx      context.Context // the consumer's (set by durable.start)
}

func ack(msg jetstream.Msg, counters *metrics.Families, kind string, log *slog.Logger) {
	if err := msg.Ack(); err != nil {
		counters.Trigger(kind).AckErrors.Inc()
		log.Warn("ack", "err", err)
	}
}

// deliveryOf is what the decisions know of msg (engine.Delivery); done
// settles it once a held event's hint has left.
func deliveryOf(msg jetstream.Msg, done func(bool)) engine.Delivery {
	d := engine.Delivery{Done: done, Working: func() { _ = msg.InProgress() }}
	// From the reply subject, as Metadata would give them, without its
	// allocation and full parse (measured: once per wake-up).
	if f, ok := ackFieldsOf(msg.Reply()); ok {
		d.Seq, d.Time, d.Delivered = f.streamSeq, time.Unix(0, int64(f.timestamp)), f.delivered
		return d
	}
	md, err := msg.Metadata()
	if err != nil {
		d.Unknown = err
		return d
	}
	d.Seq, d.Time, d.Delivered = md.Sequence.Stream, md.Timestamp, md.NumDelivered
	return d
}

// settle acts on a trigger's Outcome: ack, nak with delay, terminate
// with the reason (the deadLettering middleware has stored its copy), or
// leave it to the sender (held until its hint left).
func settle(msg jetstream.Msg, out engine.Outcome, rej *rejecter) {
	switch out.Verdict {
	case engine.Ack:
		ack(msg, rej.counters, rej.kind, rej.log)
	case engine.Retry:
		_ = msg.NakWithDelay(out.RetryAfter)
	case engine.Reject:
		reason := out.Reason()
		rej.log.Warn("malformed event terminated", "subject", msg.Subject(), "reason", reason, "err", out.Err)
		if err := msg.TermWithReason(reason); err != nil {
			rej.log.Warn("term", "err", err)
		}
	case engine.Held:
		// the sender settles it through Delivery.Done
	}
}
