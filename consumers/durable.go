package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
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

	mu sync.Mutex
	cc jetstream.ConsumeContext
}

// Defaults of the trigger consumers.
const (
	defaultMaxAckPending = 1024
	defaultAckWait       = 30 * time.Second
)

func (d *durable) start(ctx context.Context, handle func(jetstream.Msg)) error {
	if d.maxAckPending <= 0 {
		d.maxAckPending = defaultMaxAckPending
	}
	if d.ackWait <= 0 {
		d.ackWait = defaultAckWait
	}
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
	cons, err := d.js.Consumer(ctx, d.stream, d.name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = d.js.CreateConsumer(ctx, d.stream, cfg)
	}
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", d.name, d.stream, err)
	}
	h, err := cons.Consume(handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
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

// stop stops fetching and waits until the message in hand is finished.
func (d *durable) stop() {
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

// rejecter terminates malformed trigger events after copying them to the
// dead-letter subject.
type rejecter struct {
	kind     string // "requests", "responses"
	dlq      *DeadLetter
	counters *metrics.Counters
	log      *slog.Logger
}

func (r *rejecter) reject(msg jetstream.Msg, err error) {
	reason := "malformed"
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		reason = de.Reason
	}
	r.counters.IncLabel(r.kind+".malformed", reason)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if dErr := r.dlq.Publish(ctx, r.kind, reason, msg); dErr != nil {
		// Without a stored copy, terminating would lose the event: let it
		// come back instead.
		r.log.Error("dead-letter failed; will redeliver", "err", dErr)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	r.log.Warn("malformed event terminated", "subject", msg.Subject(), "reason", reason, "err", err)
	if tErr := msg.TermWithReason(reason); tErr != nil {
		r.log.Warn("term", "err", tErr)
	}
}

func ack(msg jetstream.Msg, counters *metrics.Counters, kind string, log *slog.Logger) {
	if err := msg.Ack(); err != nil {
		counters.Inc(kind + ".ack_errors")
		log.Warn("ack", "err", err)
	}
}
