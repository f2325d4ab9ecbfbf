package agentevents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"

	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/schemas"
)

// ErrInvalidOption: a Bridge option or its Config cannot work.
var ErrInvalidOption = errors.New("agentevents: invalid option")

// Defaults of the Bridge options.
const (
	DefaultPublishTimeout = 5 * time.Second
	DefaultReceiveHWM     = 100_000
	DefaultDeadLetter     = "hintstream.dlq." + DeadLetterKind
)

// pollInterval bounds how long a blocked receive goes without looking at
// ctx, and so how long Run takes to return after cancellation.
const pollInterval = 100 * time.Millisecond

// Config names the harnesses to hear.
type Config struct {
	// Endpoints are harness PUB endpoints, e.g. "tcp://harness:5590"; at
	// least one. Each gets its own SUB socket, so an endpoint names its
	// publisher when the topic is empty.
	Endpoints []string
	// Topic is the SUB prefix filter; "" (Dynamo's relay's) takes all.
	Topic string
	// DeadLetter is where bad frames are copied; "": DefaultDeadLetter.
	DeadLetter string
	// PublishTimeout bounds each publish attempt; 0: DefaultPublishTimeout.
	PublishTimeout time.Duration
	// ReceiveHWM bounds records queued in each SUB socket; 0:
	// DefaultReceiveHWM. Past it ZMQ drops, seen as a gap.
	ReceiveHWM int
	Log        *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Endpoints) == 0 {
		return c, fmt.Errorf("%w: no harness endpoint", ErrInvalidOption)
	}
	for _, e := range c.Endpoints {
		if e == "" {
			return c, fmt.Errorf("%w: empty harness endpoint", ErrInvalidOption)
		}
	}
	if c.PublishTimeout < 0 || c.ReceiveHWM < 0 {
		return c, fmt.Errorf("%w: negative publish timeout or receive HWM", ErrInvalidOption)
	}
	if c.DeadLetter == "" {
		c.DeadLetter = DefaultDeadLetter
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.ReceiveHWM == 0 {
		c.ReceiveHWM = DefaultReceiveHWM
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c, nil
}

// Stats are a Bridge's counters. A frame received is Published,
// Duplicate, Malformed or Dropped.
type Stats struct {
	Received   uint64 // frames read
	Published  uint64 // records JetStream stored
	Duplicates uint64 // records JetStream already held (same Msg-Id)
	Gaps       uint64 // jumps in a publisher's seq
	Missed     uint64 // seqs skipped by those jumps
	Restarts   uint64 // harness restarts (seq back to 1 or 0)
	OutOfOrder uint64 // seqs at or below the last, not a restart
	Malformed  uint64 // frames or records refused (dead-lettered)
	Dropped    uint64 // records given up (JetStream refuses them for good)
	// PublisherResets counts the times one endpoint's publisher table
	// was full (maxPublishers topics) and started again.
	PublisherResets uint64
	// DeadLetterErrors counts bad frames whose copy was not stored.
	DeadLetterErrors uint64
}

// LogValue logs s with snake_case keys.
func (s Stats) LogValue() slog.Value {
	return slog.GroupValue(slog.Uint64("received", s.Received), slog.Uint64("published", s.Published),
		slog.Uint64("duplicates", s.Duplicates), slog.Uint64("gaps", s.Gaps), slog.Uint64("missed", s.Missed),
		slog.Uint64("restarts", s.Restarts), slog.Uint64("out_of_order", s.OutOfOrder),
		slog.Uint64("malformed", s.Malformed), slog.Uint64("dropped", s.Dropped), slog.Uint64("publisher_resets", s.PublisherResets),
		slog.Uint64("dead_letter_errors", s.DeadLetterErrors))
}

// Bridge republishes harness tool records to JetStream (see the package
// doc for subjects, headers, Msg-Ids and sequence rules).
type Bridge struct {
	js  jetstream.JetStream
	cfg Config
	err error

	received, published, duplicates, gaps, missed, restarts, outOfOrder,
	malformed, dropped, dlqErrors, pubResets atomic.Uint64

	mu      sync.Mutex
	reasons map[string]uint64 // malformed by reason
}

// New returns a Bridge; nothing happens until Run. A bad Config is
// Run's error.
func New(js jetstream.JetStream, cfg Config) *Bridge {
	c, err := cfg.withDefaults()
	return &Bridge{js: js, cfg: c, err: err, reasons: map[string]uint64{}}
}

// Stats returns the counters so far.
func (b *Bridge) Stats() Stats {
	return Stats{Received: b.received.Load(), Published: b.published.Load(), Duplicates: b.duplicates.Load(),
		Gaps: b.gaps.Load(), Missed: b.missed.Load(), Restarts: b.restarts.Load(), OutOfOrder: b.outOfOrder.Load(),
		Malformed: b.malformed.Load(), Dropped: b.dropped.Load(), DeadLetterErrors: b.dlqErrors.Load(),
		PublisherResets: b.pubResets.Load()}
}

// MalformedByReason returns the malformed count per reason.
func (b *Bridge) MalformedByReason() map[string]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]uint64, len(b.reasons))
	for k, v := range b.reasons {
		out[k] = v
	}
	return out
}

// Run subscribes to every endpoint and republishes until ctx ends, then
// closes its sockets and returns nil; a bad Config or a socket error at
// start-up is returned (wrapping ErrInvalidOption for the former).
func (b *Bridge) Run(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	zctx, err := zmq.NewContext()
	if err != nil {
		return fmt.Errorf("agentevents: zmq context: %w", err)
	}
	defer zctx.Term()
	socks := make([]*zmq.Socket, 0, len(b.cfg.Endpoints))
	defer func() {
		for _, s := range socks {
			s.Close()
		}
	}()
	for _, ep := range b.cfg.Endpoints {
		s, err := openSub(zctx, ep, b.cfg.Topic, b.cfg.ReceiveHWM)
		if err != nil {
			return err
		}
		socks = append(socks, s)
	}
	errs := make(chan error, len(socks))
	for i, s := range socks {
		go func() { errs <- b.loop(ctx, s, b.cfg.Endpoints[i]) }()
	}
	var first error
	for range socks {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func openSub(zctx *zmq.Context, endpoint, topic string, hwm int) (*zmq.Socket, error) {
	s, err := zctx.NewSocket(zmq.SUB)
	if err != nil {
		return nil, err
	}
	for _, f := range []func() error{
		func() error { return s.SetRcvhwm(hwm) },
		func() error { return s.SetLinger(0) },
		func() error { return s.SetRcvtimeo(pollInterval) },
		func() error { return s.SetReconnectIvl(100 * time.Millisecond) },
		func() error { return s.SetReconnectIvlMax(2 * time.Second) },
		func() error { return s.SetSubscribe(topic) },
		func() error { return s.Connect(endpoint) },
	} {
		if err := f(); err != nil {
			s.Close()
			return nil, fmt.Errorf("agentevents: SUB %s: %w", endpoint, err)
		}
	}
	return s, nil
}

// No ZMQ_MAXMSGSIZE on the SUB: libzmq ends a connecting socket's
// session for good on a message over it (no reconnect; measured in
// TestHostileHarnessHugeFrame), so one oversized record would deafen the
// bridge to its harness. A huge frame is read whole and refused as
// "record too large" instead.

// seqState is one publisher's last seq; owned by its endpoint's loop.
type seqState struct {
	last uint64
	seen bool
}

// maxPublishers bounds the publishers one endpoint's loop tracks (topics
// are the harness's to choose); past it the table starts again, which
// at worst miscounts a gap.
const maxPublishers = 4096

func (b *Bridge) loop(ctx context.Context, s *zmq.Socket, endpoint string) error {
	log := b.cfg.Log.With("endpoint", endpoint)
	log.Info("hearing agent harness", "topic", b.cfg.Topic)
	pubs := map[string]*seqState{}
	for ctx.Err() == nil {
		frames, err := s.RecvMessageBytes(0)
		if err != nil {
			if e := zmq.AsErrno(err); e == zmq.Errno(syscall.EAGAIN) || e == zmq.Errno(syscall.EINTR) {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("agentevents: receive from %s: %w", endpoint, err)
		}
		b.received.Add(1)
		f, err := ParseFrame(frames)
		if err != nil {
			b.badFrame(ctx, log, endpoint, frames, err)
			continue
		}
		publisher := f.Topic
		if publisher == "" {
			publisher = endpoint
		}
		st := pubs[publisher]
		if st == nil {
			if len(pubs) >= maxPublishers {
				clear(pubs)
				if n := b.pubResets.Add(1); n&(n-1) == 0 {
					log.Warn("agent publisher table full, started again", "max_publishers", maxPublishers, "resets_total", n)
				}
			}
			st = &seqState{}
			pubs[publisher] = st
		}
		b.sequence(log, publisher, st, f.Seq)
		if err := b.publish(ctx, log, publisher, f); err != nil {
			return nil // ctx ended
		}
	}
	return nil
}

// sequence applies the package doc's rules to seq.
func (b *Bridge) sequence(log *slog.Logger, publisher string, st *seqState, seq uint64) {
	switch {
	case !st.seen:
	case seq > st.last+1:
		// One line per gap, with its range, but a harness skipping every
		// other seq would make that a line per record: past the first, the
		// 2nd, 4th, 8th, ... gap is logged, with the totals.
		n := b.gaps.Add(1)
		missed := b.missed.Add(seq - st.last - 1)
		if n&(n-1) == 0 {
			log.Warn("agent event gap", "publisher", publisher, "after_seq", st.last, "seq", seq,
				"gaps_total", n, "missed_total", missed)
		}
	case seq <= 1 && st.last > 1:
		if n := b.restarts.Add(1); n&(n-1) == 0 { // a harness flapping between 1 and 2 is not a line per record
			log.Info("agent harness restarted", "publisher", publisher, "last_seq", st.last, "seq", seq, "restarts_total", n)
		}
	case seq <= st.last:
		b.outOfOrder.Add(1)
		return // the last stays the highest seen
	}
	st.seen, st.last = true, seq
}

func (b *Bridge) publish(ctx context.Context, log *slog.Logger, publisher string, f Frame) error {
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, MsgID(publisher, f.Seq, f.Data))
	h.Set(HeaderPublisher, publisher)
	h.Set(HeaderSeq, strconv.FormatUint(f.Seq, 10))
	h.Set("Content-Type", ContentType)
	msg := &nats.Msg{Subject: Subject(f.Record), Header: h, Data: f.Data}
	wait := retry.Doubling(20*time.Millisecond, 2*time.Second)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.cfg.PublishTimeout)
		ack, err := b.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			if ack.Duplicate {
				b.duplicates.Add(1)
			} else {
				b.published.Add(1)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) {
			b.dropped.Add(1)
			log.Error("agent event dropped: JetStream will never take it", "seq", f.Seq, "err", err)
			return nil
		}
		if attempt&(attempt-1) == 0 {
			log.Warn("agent event publish failed, retrying", "seq", f.Seq, "attempt", attempt, "err", err)
		}
		if !retry.Wait(ctx, wait.NextBackOff()) {
			return ctx.Err()
		}
	}
}

// badFrame counts a refused frame and copies it, frames joined as the
// harness sent them, to the dead-letter subject with its reason.
func (b *Bridge) badFrame(ctx context.Context, log *slog.Logger, endpoint string, frames [][]byte, err error) {
	n := b.malformed.Add(1)
	reason := errReason(err)
	b.mu.Lock()
	if _, ok := b.reasons[reason]; ok || len(b.reasons) < 256 {
		b.reasons[reason]++
	}
	b.mu.Unlock()
	if n&(n-1) == 0 {
		log.Warn("malformed agent event dead-lettered", "reason", reason, "err", err, "malformed_total", n)
	}
	var data []byte
	if len(frames) > 0 {
		data = frames[len(frames)-1]
	}
	if len(data) > MaxRecordBytes {
		data = data[:MaxRecordBytes]
	}
	h := nats.Header{}
	h.Set(schemas.HeaderDeadLetterReason, reason)
	h.Set("Hintstream-Agent-Endpoint", endpoint)
	h.Set("Hintstream-Frames", strconv.Itoa(len(frames)))
	if len(frames) == 3 && len(frames[1]) == 8 {
		h.Set(HeaderSeq, strconv.FormatUint(beUint64(frames[1]), 10))
	}
	actx, cancel := context.WithTimeout(ctx, b.cfg.PublishTimeout)
	defer cancel()
	if _, err := b.js.PublishMsg(actx, &nats.Msg{Subject: b.cfg.DeadLetter, Header: h, Data: data}); err != nil && ctx.Err() == nil {
		b.dlqErrors.Add(1)
		log.Warn("dead-letter copy not stored", "err", err)
	}
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
