package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// EventPlaneConfig says which of Dynamo's ZMQ event-plane publishers to
// bridge onto JetStream, and under which scope.
type EventPlaneConfig struct {
	// Endpoints are the publishers' PUB endpoints as discovery advertises
	// them (tcp://<host>:<port>; each of a worker's or a router's
	// EventPublishers binds a port of its own), or, with Broker, the
	// broker's XPUB endpoints. At least one.
	Endpoints []string
	// Broker: the endpoints are a ZMQ broker's XPUB, whose topic frames
	// are whole subjects; the bridge subscribes to the scope's prefix.
	Broker bool
	// Scope names the subjects: a directly bound publisher's frames go to
	// Scope.Subject(topic); a broker's to their own subject, which must
	// lie within the scope.
	Scope eventplane.Scope
	// Topics to bridge; default kv-events and kv_metrics, and
	// active_sequences_events with Scope.ActiveSequences.
	Topics []string
	// DeadLetter is the subject refused messages are copied to; default
	// DefaultEventPlaneDeadLetter.
	DeadLetter string
}

// DefaultEventPlaneDeadLetter is where the bridge copies a ZMQ message it
// refuses: its last frame, with the reason in Hintstream-Error.
var DefaultEventPlaneDeadLetter = streams.DeadLetterSubject("event_plane")

// EventPlaneTopics is the default of EventPlaneConfig.Topics.
func EventPlaneTopics(s eventplane.Scope) []string {
	t := []string{eventplane.TopicKVEvents, eventplane.TopicKVMetrics}
	if s.ActiveSequences {
		t = append(t, eventplane.TopicActiveSequences)
	}
	return t
}

// Validate reports a config Run would refuse (wrapping ErrConfig).
func (c EventPlaneConfig) Validate() error {
	_, err := c.withDefaults()
	return err
}

func (c EventPlaneConfig) withDefaults() (EventPlaneConfig, error) {
	if len(c.Endpoints) == 0 || slices.Contains(c.Endpoints, "") {
		return c, fmt.Errorf("%w: no Dynamo event-plane endpoint", ErrConfig)
	}
	if err := c.Scope.Validate(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if len(c.Topics) == 0 {
		c.Topics = EventPlaneTopics(c.Scope)
	}
	if c.DeadLetter == "" {
		c.DeadLetter = DefaultEventPlaneDeadLetter
	}
	for _, t := range c.Topics {
		if t == "" || strings.ContainsAny(t, ". *>") {
			return c, fmt.Errorf("%w: topic %q", ErrConfig, t)
		}
	}
	return c, nil
}

// subscriptions are the SUB prefixes: the topics from publishers bound
// directly, the scope's subjects through a broker.
func (c EventPlaneConfig) subscriptions() []string {
	if !c.Broker {
		return c.Topics
	}
	return []string{strings.TrimSuffix(c.Scope.Subject("x"), "x")}
}

// EventPlaneStats are an EventPlaneBridge's counters. A message received
// is Published, Duplicate, Repeated, Skipped, Malformed or Dropped.
type EventPlaneStats struct {
	Received   uint64 // messages read
	Published  uint64 // envelopes JetStream stored
	Duplicates uint64 // envelopes JetStream already held (same Msg-Id)
	// Gaps counts jumps in a publisher's sequence, Missing the frames
	// they skipped: lost to a high-water mark or a slow joiner (Dynamo's
	// event plane has no replay).
	Gaps, Missing uint64
	Repeated      uint64 // frames at or below their publisher's last sequence (two brokers)
	Skipped       uint64 // frames of a topic or subject not bridged
	Malformed     uint64 // messages refused (see MalformedByReason), each copied to the dead-letter subject
	// DeadLetterErrors counts refused messages whose copy was not stored.
	DeadLetterErrors uint64
	Dropped          uint64 // envelopes JetStream refuses for good
	Publishers       uint64 // publishers seen
}

// LogValue logs s with snake_case keys.
func (s EventPlaneStats) LogValue() slog.Value {
	return slog.GroupValue(slog.Uint64("received", s.Received), slog.Uint64("published", s.Published),
		slog.Uint64("duplicates", s.Duplicates), slog.Uint64("gaps", s.Gaps), slog.Uint64("missing", s.Missing),
		slog.Uint64("repeated", s.Repeated), slog.Uint64("skipped", s.Skipped), slog.Uint64("malformed", s.Malformed),
		slog.Uint64("dropped", s.Dropped), slog.Uint64("publishers", s.Publishers),
		slog.Uint64("dead_letter_errors", s.DeadLetterErrors))
}

// EventPlaneBridge republishes Dynamo's ZMQ event plane (KV events, load,
// ActiveSequenceEvents) to JetStream, each envelope unchanged on the
// subject the NATS transport would have used, so that hintstream reads
// one format whichever transport Dynamo runs. See the package doc.
type EventPlaneBridge struct {
	js  jetstream.JetStream
	cfg EventPlaneConfig
	o   options
	err error

	running                                                                 atomic.Bool
	received, published, duplicates, skipped, malformed, dropped, dlqErrors atomic.Uint64

	mu      sync.Mutex
	gaps    eventplane.Gaps
	reasons map[string]uint64
}

// NewEventPlane returns an EventPlaneBridge; nothing happens until Run.
// A bad config is Run's error. Of the options, the logger, the publish
// timeout and the receive high-water mark apply.
func NewEventPlane(js jetstream.JetStream, cfg EventPlaneConfig, opts ...Option) *EventPlaneBridge {
	c, err := cfg.withDefaults()
	return &EventPlaneBridge{js: js, cfg: c, o: buildOptions(opts), err: err, reasons: map[string]uint64{}}
}

// Stats returns the counters so far; safe to call at any time.
func (b *EventPlaneBridge) Stats() EventPlaneStats {
	b.mu.Lock()
	g := b.gaps.Stats()
	b.mu.Unlock()
	return EventPlaneStats{Received: b.received.Load(), Published: b.published.Load(), Duplicates: b.duplicates.Load(),
		Gaps: g.Gaps, Missing: g.Missing, Repeated: g.Repeated, Skipped: b.skipped.Load(),
		Malformed: b.malformed.Load(), Dropped: b.dropped.Load(), Publishers: g.Publishers,
		DeadLetterErrors: b.dlqErrors.Load()}
}

// MalformedByReason returns the refused messages per reason.
func (b *EventPlaneBridge) MalformedByReason() map[string]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.reasons)
}

// Run checks that streams capture the topics' subjects, connects one SUB
// socket to every endpoint and republishes until ctx ends, then closes
// its socket and returns nil. A bad config (ErrConfig), a subject no
// stream captures (ErrNoStream), another Run under way (ErrRunning) or a
// socket error at start-up is returned.
func (b *EventPlaneBridge) Run(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	if !b.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.running.Store(false)
	log := b.o.log.With("component", "dynamo-event-plane-bridge")
	for _, t := range b.cfg.Topics {
		subj := b.cfg.Scope.Subject(t)
		if _, err := b.js.StreamNameBySubject(ctx, subj); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("%w: %q", ErrNoStream, subj)
			}
			return fmt.Errorf("bridge: look up the stream of %q: %w", subj, err)
		}
	}
	zctx, err := zmq.NewContext()
	if err != nil {
		return fmt.Errorf("bridge: zmq context: %w", err)
	}
	defer zctx.Term()
	subs := b.cfg.subscriptions()
	s, err := openSub(zctx, b.cfg.Endpoints[0], subs[0], b.o.rcvHWM)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, p := range subs[1:] {
		if err := s.SetSubscribe(p); err != nil {
			return fmt.Errorf("bridge: subscribe %q: %w", p, err)
		}
	}
	// One socket for every publisher: ZMQ fair-queues them, and each
	// publisher's frames stay in its order.
	for _, ep := range b.cfg.Endpoints[1:] {
		if err := s.Connect(ep); err != nil {
			return fmt.Errorf("bridge: SUB %s: %w", ep, err)
		}
	}
	log.Info("bridging Dynamo's ZMQ event plane", "endpoints", b.cfg.Endpoints, "broker", b.cfg.Broker,
		"topics", b.cfg.Topics, "namespace", b.cfg.Scope.Namespace, "component", b.cfg.Scope.Component)
	for ctx.Err() == nil {
		frames, err := s.RecvMessageBytes(0)
		if temporary(err) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("bridge: receive: %w", err)
		}
		b.received.Add(1)
		if err := b.onMessage(ctx, log, frames); err != nil {
			break // ctx ended
		}
	}
	return nil
}

// onMessage parses, sequences and republishes one message; its error is
// ctx's.
func (b *EventPlaneBridge) onMessage(ctx context.Context, log *slog.Logger, frames [][]byte) error {
	m, err := eventplane.ParseZMQ(frames, schemas.Limits{})
	if err != nil {
		b.refuse(ctx, log, frames, err)
		return nil
	}
	if !slices.Contains(b.cfg.Topics, m.Envelope.Topic) {
		b.skipped.Add(1) // a prefix subscription matched a longer topic
		return nil
	}
	subject := m.Subject(b.cfg.Scope)
	if b.cfg.Broker && !strings.HasPrefix(subject, b.cfg.subscriptions()[0]) {
		b.skipped.Add(1)
		return nil
	}
	b.mu.Lock()
	missing, fresh := b.gaps.Observe(m.Envelope.PublisherID, m.Envelope.Sequence)
	gaps := b.gaps.Stats()
	b.mu.Unlock()
	if missing > 0 && gaps.Gaps&(gaps.Gaps-1) == 0 { // 1, 2, 4, ...: visible, not a flood
		log.Warn("gap in a Dynamo publisher's sequence; those frames are lost", "publisher_id", m.Envelope.PublisherID,
			"topic", m.Envelope.Topic, "sequence", m.Envelope.Sequence, "missing", missing,
			"gaps_total", gaps.Gaps, "missing_total", gaps.Missing)
	}
	if !fresh {
		return nil // JetStream holds it already, or will from the other broker
	}
	return b.publish(ctx, log, subject, m)
}

// refuse counts a message that breaks the wire by its reason and copies
// its last frame, with the reason and its frame count, to the
// dead-letter subject.
func (b *EventPlaneBridge) refuse(ctx context.Context, log *slog.Logger, frames [][]byte, err error) {
	n := b.malformed.Add(1)
	reason := "malformed"
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		reason = de.Reason
	}
	b.mu.Lock()
	if _, ok := b.reasons[reason]; ok || len(b.reasons) < 256 {
		b.reasons[reason]++
	}
	b.mu.Unlock()
	if n&(n-1) == 0 {
		log.Warn("malformed Dynamo event-plane message dead-lettered", "reason", reason, "err", err, "malformed_total", n)
	}
	h := nats.Header{}
	h.Set(HeaderDLQReason, reason)
	h.Set(HeaderZMQFrames, strconv.Itoa(len(frames)))
	if len(frames) > 0 && len(frames[0]) <= 256 {
		h.Set(HeaderZMQTopic, string(frames[0]))
	}
	var data []byte
	if len(frames) > 0 {
		data = frames[len(frames)-1]
	}
	actx, cancel := context.WithTimeout(ctx, b.o.publishTimeout)
	defer cancel()
	if _, err := b.js.PublishMsg(actx, &nats.Msg{Subject: b.cfg.DeadLetter, Header: h, Data: data}); err != nil && ctx.Err() == nil {
		b.dlqErrors.Add(1)
		log.Warn("dead-letter copy not stored", "err", err)
	}
}

// Headers of a dead-lettered ZMQ message.
const (
	HeaderDLQReason = "Hintstream-Error"
	HeaderZMQFrames = "Hintstream-Zmq-Frames"
	HeaderZMQTopic  = "Hintstream-Zmq-Topic"
)

// EventPlaneMsgID is the Nats-Msg-Id of a bridged envelope: its
// publisher and sequence, which no other frame shares (a restarted
// publisher draws a new publisher_id), so that two bridges, or one
// bridge reading two brokers, store each envelope once.
func EventPlaneMsgID(publisherID, sequence uint64) string {
	return "ep-" + strconv.FormatUint(publisherID, 10) + "-" + strconv.FormatUint(sequence, 10)
}

// publish stores one envelope, retrying with backoff until JetStream
// takes it, refuses it for good (counted as dropped) or ctx ends (then
// the error is ctx's).
func (b *EventPlaneBridge) publish(ctx context.Context, log *slog.Logger, subject string, m eventplane.ZMQMessage) error {
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, EventPlaneMsgID(m.Envelope.PublisherID, m.Envelope.Sequence))
	msg := &nats.Msg{Subject: subject, Header: h, Data: m.Raw}
	wait := retry.Doubling(20*time.Millisecond, 2*time.Second)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.o.publishTimeout)
		ack, err := b.js.PublishMsg(actx, msg)
		cancel()
		switch {
		case err == nil && ack.Duplicate:
			b.duplicates.Add(1)
			return nil
		case err == nil:
			b.published.Add(1)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case permanent(err):
			b.dropped.Add(1)
			log.Error("envelope dropped: JetStream will never take it", "subject", subject, "bytes", len(m.Raw), "err", err)
			return nil
		}
		if attempt&(attempt-1) == 0 {
			log.Warn("publish failed, retrying", "subject", subject, "attempt", attempt, "err", err)
		}
		if !retry.Wait(ctx, wait.NextBackOff()) {
			return ctx.Err()
		}
	}
}
