// Package floor is the least any wake-up → hint forwarder must do, as a
// yardstick for hintstream's overhead: consume request events from
// JetStream, decode each, build the same kv.prefetch@1.0 envelope
// hintstream would (same payload, so the same bytes on the wire), push it
// over ZeroMQ to one fixed endpoint and ack. No worker choice, no index,
// no registry, no retries, no metrics: whatever hintstream adds on top of
// this is its overhead.
package floor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// ErrConfig is matched (errors.Is) by every error for an unusable Config.
var ErrConfig = errors.New("floor: invalid config")

// Config configures Run. NATSURL and Endpoint are required.
type Config struct {
	NATSURL  string
	Endpoint string // ZMQ endpoint of the one PULL socket every hint goes to
	// Stream holding the requests; default LLM_REQUESTS, created (with
	// hintstream's defaults) when absent.
	Stream string
	// Subject filter; default llm.requests.>.
	Subject string
	// Durable names the pull consumer (AckExplicit, deliver new, acked
	// after each send, like hintstream's). Default "floor-requests".
	Durable string
	// Ordered uses an ephemeral ordered consumer instead: no acks, the
	// cheapest way JetStream delivers.
	Ordered bool
	// PrefetchTTL sets expires_at_ms as hintstream does; default 2s.
	PrefetchTTL time.Duration
	// Ready is called once, when the consumer is consuming.
	Ready  func()
	Logger *slog.Logger // default slog.Default()
}

// Stats are Run's counts, readable while it runs.
type Stats struct {
	Forwarded, Skipped, SendErrors atomic.Int64
}

// Run consumes until ctx ends, then returns nil (or the first setup
// error). It never retries a failed send: a hint is fire-and-forget.
func Run(ctx context.Context, cfg Config) error { return RunStats(ctx, cfg, nil) }

// RunStats is Run that also counts into st (may be nil).
func RunStats(ctx context.Context, cfg Config, st *Stats) error {
	if cfg.NATSURL == "" || cfg.Endpoint == "" {
		return fmt.Errorf("%w: NATSURL and Endpoint are required", ErrConfig)
	}
	if cfg.Stream == "" {
		cfg.Stream = "LLM_REQUESTS"
	}
	if cfg.Subject == "" {
		cfg.Subject = "llm.requests.>"
	}
	if cfg.Durable == "" {
		cfg.Durable = "floor-requests"
	}
	if cfg.PrefetchTTL <= 0 {
		cfg.PrefetchTTL = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if st == nil {
		st = &Stats{}
	}
	sock, err := zmq.NewSocket(zmq.PUSH)
	if err != nil {
		return fmt.Errorf("floor: zmq: %w", err)
	}
	defer sock.Close()
	// A bounded blocking send: the one receiver is up for the whole run.
	for _, set := range []func() error{
		func() error { return sock.SetLinger(100 * time.Millisecond) },
		func() error { return sock.SetSndtimeo(time.Second) },
		func() error { return sock.Connect(cfg.Endpoint) },
	} {
		if err := set(); err != nil {
			return fmt.Errorf("floor: zmq %s: %w", cfg.Endpoint, err)
		}
	}
	nc, err := nats.Connect(cfg.NATSURL, nats.Name("hintstream-floor"))
	if err != nil {
		return fmt.Errorf("floor: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	sc := streams.DefaultSet().Requests
	sc.Name, sc.Subjects = cfg.Stream, []string{cfg.Subject}
	stream, _, err := streams.Ensure(ctx, js, sc)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	var cons jetstream.Consumer
	if cfg.Ordered {
		cons, err = stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{cfg.Subject}, DeliverPolicy: jetstream.DeliverNewPolicy})
	} else {
		cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: cfg.Durable,
			FilterSubject: cfg.Subject, AckPolicy: jetstream.AckExplicitPolicy,
			DeliverPolicy: jetstream.DeliverNewPolicy, MaxAckPending: 1024})
	}
	if err != nil {
		return fmt.Errorf("floor: consumer: %w", err)
	}
	var lim schemas.Limits
	handle := func(msg jetstream.Msg) {
		body, err := envelope(msg, lim, cfg.PrefetchTTL)
		if err != nil || body == nil {
			st.Skipped.Add(1)
			if err != nil {
				cfg.Logger.Debug("skipped", "err", err)
			}
		} else if _, err := sock.SendBytes(body, 0); err != nil {
			st.SendErrors.Add(1)
			cfg.Logger.Warn("send", "endpoint", cfg.Endpoint, "err", err)
		} else {
			st.Forwarded.Add(1)
		}
		if !cfg.Ordered {
			_ = msg.Ack()
		}
	}
	// The handler runs on one goroutine, which alone owns the socket.
	cc, err := cons.Consume(handle, jetstream.PullExpiry(5*time.Second))
	if err != nil {
		return fmt.Errorf("floor: consume: %w", err)
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	<-ctx.Done()
	cc.Drain()
	// Bounded: with the server gone, a drain may never complete.
	select {
	case <-cc.Closed():
	case <-time.After(5 * time.Second):
		cc.Stop()
	}
	cfg.Logger.Info("floor stopped", "forwarded", st.Forwarded.Load(), "skipped", st.Skipped.Load(),
		"send_errors", st.SendErrors.Load())
	return nil
}

// envelope decodes a request and encodes its kv.prefetch envelope, or
// returns nil for a request that is not a wake-up.
func envelope(msg jetstream.Msg, lim schemas.Limits, ttl time.Duration) ([]byte, error) {
	req, err := lim.DecodeRequest(msg.Data(), msg.Headers().Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if !isWakeup(req.Headers) {
		return nil, nil
	}
	base := time.Now()
	if req.ReceivedAtMs > 0 {
		base = time.UnixMilli(req.ReceivedAtMs)
	}
	body, _, err := actions.EncodePrefetch(actions.Prefetch{RequestID: req.RequestID, SessionID: req.SessionID,
		Model: req.Model, TokenIDs: req.TokenIDs, ExpiresAt: base.Add(ttl)})
	return body, err
}

func isWakeup(h map[string]string) bool {
	v, ok := h[schemas.HeaderWakeup]
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return false
	}
	return true
}
