package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/streams"
)

// Sentinel errors, usable with errors.Is.
var (
	// ErrConfig: the Config cannot work (no endpoint, a bad subject).
	ErrConfig = errors.New("bridge: bad config")
	// ErrRunning: Run was called while another Run of the same Bridge runs.
	ErrRunning = errors.New("bridge: already running")
	// ErrNoStream: no JetStream stream captures the subject, so nothing
	// the bridge published would be kept.
	ErrNoStream = errors.New("bridge: no stream captures the subject")
	// ErrReplay: a replay request failed (no answer in time, or frames
	// that do not follow the protocol). Run logs it and goes on.
	ErrReplay = errors.New("bridge: replay failed")
)

// Config says which engine stream to bridge and where to.
type Config struct {
	// Endpoint is the engine's PUB endpoint, e.g. "tcp://engine:5557"
	// (vLLM offsets the port by the dp rank: pass the rank's own port).
	// Required.
	Endpoint string
	// Topic is the SUB prefix filter; "" (the default, and vLLM's) takes
	// every message.
	Topic string
	// ReplayEndpoint is the engine's ROUTER replay endpoint, e.g.
	// "tcp://engine:5558". Empty: gaps are counted, not filled.
	ReplayEndpoint string
	// WorkerID names the worker in the subject and the Msg-Id.
	WorkerID uint64
	// DpRank is the engine's data parallel rank, part of the Msg-Id so
	// that ranks of one worker sharing a subject never collide. Default 0.
	DpRank uint32
	// Subject to publish to; default streams.KVEventSubject(WorkerID).
	Subject string
}

func (c Config) subject() string {
	if c.Subject == "" {
		return streams.KVEventSubject(c.WorkerID)
	}
	return c.Subject
}

func (c Config) validate() error {
	if c.Endpoint == "" {
		return fmt.Errorf("%w: no ZMQ endpoint", ErrConfig)
	}
	s := c.subject()
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("%w: subject %q is not a literal subject", ErrConfig, s)
		}
	}
	return nil
}

// Option configures a Bridge.
type Option func(*options)

type options struct {
	log            *slog.Logger
	replayFrom     *uint64
	replayTimeout  time.Duration
	publishTimeout time.Duration
	rcvHWM         int
	maxReplay      int
}

// WithLogger sets the logger; default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithReplayFrom makes Run ask the replay endpoint, once at start-up, for
// every batch from seq on, and publish them even if they were published
// before (JetStream drops those still in its duplicate window). Without
// it, Run resumes after the last batch it finds in the stream, or takes
// all the engine buffers when the stream has none. Ignored without a
// replay endpoint.
func WithReplayFrom(seq uint64) Option { return func(o *options) { o.replayFrom = &seq } }

// WithReplayTimeout bounds the wait for each frame of a replay; default
// 5s. A replay that times out is counted as failed and its gap as lost.
func WithReplayTimeout(d time.Duration) Option { return func(o *options) { o.replayTimeout = d } }

// WithPublishTimeout bounds each publish attempt (retries follow with
// backoff); default 5s.
func WithPublishTimeout(d time.Duration) Option { return func(o *options) { o.publishTimeout = d } }

// WithReceiveHWM sets the SUB socket's receive high-water mark, the
// bound on live batches queued while the bridge publishes or replays;
// default 100000 (vLLM's PUB default). Past it ZMQ drops, which the
// bridge then sees as a gap.
func WithReceiveHWM(n int) Option { return func(o *options) { o.rcvHWM = n } }

// WithMaxReplay bounds the batches one replay may return; default 100000
// (ten times vLLM's buffer). A longer replay fails with ErrReplay.
func WithMaxReplay(n int) Option { return func(o *options) { o.maxReplay = n } }

// Defaults of the options above.
const (
	DefaultReplayTimeout = 5 * time.Second
	// The agent-event bridge's: both bridges publish to JetStream from
	// a ZeroMQ SUB socket.
	DefaultPublishTimeout = agentevents.DefaultPublishTimeout
	DefaultReceiveHWM     = agentevents.DefaultReceiveHWM
	DefaultMaxReplay      = 100_000
)

func buildOptions(opts []Option) options {
	o := options{replayTimeout: DefaultReplayTimeout, publishTimeout: DefaultPublishTimeout,
		rcvHWM: DefaultReceiveHWM, maxReplay: DefaultMaxReplay}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.replayTimeout <= 0 {
		o.replayTimeout = 5 * time.Second
	}
	if o.publishTimeout <= 0 {
		o.publishTimeout = 5 * time.Second
	}
	if o.rcvHWM < 0 {
		o.rcvHWM = 100_000
	}
	if o.maxReplay <= 0 {
		o.maxReplay = 100_000
	}
	return o
}

// Stats are the bridge's counters since New. A batch the bridge set out
// to publish is counted in Published, Duplicates, Lost or Dropped; none
// disappears uncounted.
type Stats struct {
	Received       uint64 // batches read from the PUB stream
	Replayed       uint64 // batches obtained by replay and stored (part of Published)
	Published      uint64 // batches JetStream stored
	Duplicates     uint64 // batches not stored twice: skipped by seq, or acked as duplicate by JetStream
	Gaps           uint64 // jumps in the engine's seq (each counted once, filled or not)
	Lost           uint64 // batches of a gap that replay did not fill
	Restarts       uint64 // engine restarts seen (each begins a new epoch)
	Malformed      uint64 // messages or replay frames that break the wire format
	ReplayFailures uint64 // replay requests that failed (see ErrReplay)
	PublishErrors  uint64 // failed publish attempts (each was retried)
	Dropped        uint64 // batches given up after a publish error retrying cannot fix
}

// LogValue logs s as a group with snake_case keys (not a %+v dump).
func (s Stats) LogValue() slog.Value {
	return slog.GroupValue(slog.Uint64("received", s.Received), slog.Uint64("replayed", s.Replayed),
		slog.Uint64("published", s.Published), slog.Uint64("duplicates", s.Duplicates), slog.Uint64("gaps", s.Gaps),
		slog.Uint64("lost", s.Lost), slog.Uint64("restarts", s.Restarts), slog.Uint64("malformed", s.Malformed),
		slog.Uint64("replay_failures", s.ReplayFailures), slog.Uint64("publish_errors", s.PublishErrors),
		slog.Uint64("dropped", s.Dropped))
}
