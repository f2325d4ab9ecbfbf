package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultMaxInFlight bounds the publishes awaiting their JetStream ack.
const DefaultMaxInFlight = 256

// maxKeptErrors bounds the asynchronous errors Flush reports one by one;
// more are counted.
const maxKeptErrors = 8

// Format is an event encoding.
type Format int

const (
	// JSON is readable and what the nats CLI sends (the default).
	JSON Format = iota
	// Msgpack is smaller and faster to decode.
	Msgpack
)

func (f Format) contentType() string {
	if f == Msgpack {
		return "application/msgpack"
	}
	return "application/json"
}

// Sentinel errors, usable with errors.Is.
var (
	// ErrMissingRequestID: the event has no request_id, which hintstream
	// would dead-letter.
	ErrMissingRequestID = errors.New("client: event has no request_id")
	// ErrInvalidOption: an option was given a value it cannot take.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrClosed: the Publisher was closed.
	ErrClosed = errors.New("client: publisher closed")
)

// Option configures a Publisher.
type Option func(*options) error

type options struct {
	format      Format
	maxInFlight int
	msgID       bool
	subjects    func(model string) (request, response string)
}

// WithFormat sets the encoding (default JSON).
func WithFormat(f Format) Option {
	return func(o *options) error {
		if f != JSON && f != Msgpack {
			return fmt.Errorf("%w: format %d", ErrInvalidOption, f)
		}
		o.format = f
		return nil
	}
}

// WithMaxInFlight bounds the publishes awaiting their ack (default
// DefaultMaxInFlight); a publish past it waits for a place.
func WithMaxInFlight(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: max in flight %d, want > 0", ErrInvalidOption, n)
		}
		o.maxInFlight = n
		return nil
	}
}

// WithMsgID turns the Nats-Msg-Id header on or off (default on). Off only
// for a test that publishes the same event twice on purpose, to see
// hintstream cope with a duplicate that got past the window.
func WithMsgID(on bool) Option {
	return func(o *options) error { o.msgID = on; return nil }
}

// WithSubjects replaces the default subjects (streams.RequestSubject and
// streams.ResponseSubject of the event's model), for a deployment that
// renamed them (hintstream run --requests-subjects ...).
func WithSubjects(f func(model string) (request, response string)) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("%w: nil subjects function", ErrInvalidOption)
		}
		o.subjects = f
		return nil
	}
}

// Publisher publishes request and response events. It is safe for
// concurrent use. Publishes are asynchronous: PublishRequest and
// PublishResponse return once the event is on its way, and Flush waits
// for the acks and reports the publishes that failed.
type Publisher struct {
	js   jetstream.JetStream
	opts options
	// sem holds a token per publish awaiting its ack; Flush waits by
	// taking every token.
	sem chan struct{}

	bytes atomic.Int64 // payload bytes handed to NATS

	mu      sync.Mutex
	errs    []error
	dropped int // errors past maxKeptErrors since the last Flush
	closed  bool
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream, opts ...Option) (*Publisher, error) {
	o := options{format: JSON, maxInFlight: DefaultMaxInFlight, msgID: true,
		subjects: func(m string) (string, string) { return streams.RequestSubject(m), streams.ResponseSubject(m) }}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Publisher{js: js, opts: o, sem: make(chan struct{}, o.maxInFlight)}, nil
}

// RequestMsgID is the Nats-Msg-Id of a request event: a retry of the same
// request is a duplicate, and a wake-up never collides with the turn that
// follows it even when the frontend gives both one id.
func RequestMsgID(ev *schemas.RequestEvent) string {
	if IsWakeup(ev.Headers) {
		return "wake:" + ev.RequestID
	}
	return "req:" + ev.RequestID
}

// ResponseMsgID is the Nats-Msg-Id of a response event.
func ResponseMsgID(ev *schemas.ResponseEvent) string { return "resp:" + ev.RequestID }

// PublishRequest publishes ev on llm.requests.<model>. It waits for a
// place when MaxInFlight publishes await their ack, until ctx ends.
func (p *Publisher) PublishRequest(ctx context.Context, ev *schemas.RequestEvent) error {
	if ev == nil || ev.RequestID == "" {
		return ErrMissingRequestID
	}
	data, err := p.encode(ev, func() ([]byte, error) { return ev.MarshalMsg(nil) })
	if err != nil {
		return fmt.Errorf("client: encode request %q: %w", ev.RequestID, err)
	}
	subj, _ := p.opts.subjects(ev.Model)
	return p.publish(ctx, subj, RequestMsgID(ev), data)
}

// PublishResponse publishes ev on llm.responses.<model>, as
// PublishRequest does.
func (p *Publisher) PublishResponse(ctx context.Context, ev *schemas.ResponseEvent) error {
	if ev == nil || ev.RequestID == "" {
		return ErrMissingRequestID
	}
	data, err := p.encode(ev, func() ([]byte, error) { return ev.MarshalMsg(nil) })
	if err != nil {
		return fmt.Errorf("client: encode response %q: %w", ev.RequestID, err)
	}
	_, subj := p.opts.subjects(ev.Model)
	return p.publish(ctx, subj, ResponseMsgID(ev), data)
}

func (p *Publisher) encode(v any, msgpack func() ([]byte, error)) ([]byte, error) {
	if p.opts.format == Msgpack {
		return msgpack()
	}
	return json.Marshal(v)
}

func (p *Publisher) publish(ctx context.Context, subject, msgID string, data []byte) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{"Content-Type": {p.opts.format.contentType()}}}
	if p.opts.msgID {
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	f, err := p.js.PublishMsgAsync(m)
	if err != nil {
		<-p.sem
		return fmt.Errorf("client: publish %s: %w", subject, err)
	}
	p.bytes.Add(int64(len(data)))
	go p.await(f)
	return nil
}

// Bytes is the total size of the event payloads handed to NATS so far
// (headers not counted).
func (p *Publisher) Bytes() int64 { return p.bytes.Load() }

// await releases f's place once JetStream answered, keeping a failure
// for Flush.
func (p *Publisher) await(f jetstream.PubAckFuture) {
	defer func() { <-p.sem }()
	select {
	case <-f.Ok():
	case err := <-f.Err():
		p.mu.Lock()
		if len(p.errs) < maxKeptErrors {
			p.errs = append(p.errs, fmt.Errorf("client: publish %s: %w", f.Msg().Subject, err))
		} else {
			p.dropped++
		}
		p.mu.Unlock()
	}
}

// Flush waits until every publish so far was acked or failed, or ctx
// ends, and returns the failures since the last Flush (nil when none).
// Publishes wait while it runs.
func (p *Publisher) Flush(ctx context.Context) error {
	held := 0
	defer func() {
		for ; held > 0; held-- {
			<-p.sem
		}
	}()
	for held < cap(p.sem) {
		select {
		case p.sem <- struct{}{}:
			held++
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	errs := p.errs
	if p.dropped > 0 {
		errs = append(errs, fmt.Errorf("client: %d more publishes failed", p.dropped))
	}
	p.errs, p.dropped = nil, 0
	return errors.Join(errs...)
}

// Close refuses further publishes and flushes.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.Flush(ctx)
}

// IsWakeup reports whether h (an event's headers map) asks for a
// wake-up, as hintstream reads it: the header present, case-insensitive,
// with an empty value, 1, true, yes or on.
func IsWakeup(h map[string]string) bool {
	for k, v := range h {
		if strings.EqualFold(k, schemas.HeaderWakeup) {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "", "1", "true", "yes", "on":
				return true
			}
		}
	}
	return false
}
