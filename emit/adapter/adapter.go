package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/emit/receiver"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// Defaults of Config.
const (
	// DefaultMaxInflight caps concurrent engine calls: a warm-up takes a
	// scheduler step from the engine's real traffic, so only a few run
	// at once.
	DefaultMaxInflight = 4
	// DefaultCallQueueSize bounds the hints waiting for a call slot; past it a
	// hint is dropped (queue_full) rather than the socket blocked.
	DefaultCallQueueSize = 256
	// DefaultCallTimeout bounds one engine call. A one-token request whose
	// prefix is computed rather than loaded can take seconds at long
	// contexts; past this the engine is too busy for warm-ups to pay.
	DefaultCallTimeout = 30 * time.Second
	// DefaultPriorityTTL is how long vLLM keeps a prefetched prefix at
	// raised priority: the time a user typically takes between opening a
	// thread and sending the turn.
	DefaultPriorityTTL = 2 * time.Minute
	// DefaultPrefetchValue is the vllm.set_priority value of a prefetched
	// prefix: above unclaimed blocks (0) and below a tool-call retain of
	// a long context (actions.Priority gives up to 100).
	DefaultPrefetchValue = 10
	// DefaultEngineRetryDelay is the first wait before retrying an engine call
	// that got no connection or a 5xx; it doubles up to maxRetryDelay,
	// each wait jittered ±50% (retry.Doubling),
	// and no retry starts past the hint's expiry.
	DefaultEngineRetryDelay = 50 * time.Millisecond
	maxRetryDelay           = time.Second
	// DefaultQueueTokens bounds the prompt tokens held by hints queued
	// or in flight: 8 Mi tokens, 32 MiB of ids. Counting hints alone
	// (DefaultCallQueueSize) let 256 queued million-token prompts hold 1 GiB.
	DefaultQueueTokens = 8 << 20
	// DefaultMaxMessageBytes is the largest hint message read off the
	// socket (ZMQ_MAXMSGSIZE; a larger one disconnects its sender): a
	// prefetch of hintstream's most tokens (1 Mi, schemas.DefaultLimits)
	// takes at most 5 MiB of msgpack.
	DefaultMaxMessageBytes = 8 << 20
	// DefaultMaxHintLife bounds how far ahead a hint's expires_at_ms is
	// believed. hintstream's prefetches expire 2 s after their wake-up and
	// its retains within 30 s (actions.TTLConfig.Deadline); a deadline
	// hours away is a sender's clock gone wrong or a hostile one, and
	// taken at its word it would keep a call slot retrying a failing
	// engine until then and give vLLM a prefetch TTL of as long.
	DefaultMaxHintLife = 5 * time.Minute
	// maxErrorBody is how much of a refusal's body is logged.
	maxErrorBody = 512
	// maxDrainBody is how much more of an answer is read so the
	// connection can be reused; past it the connection is closed, so an
	// engine streaming an endless body costs 64 KiB, not the call slot
	// until CallTimeout.
	maxDrainBody = 64 << 10
	// maxRedirects bounds the same-host redirects followed.
	maxRedirects = 3
	// DefaultLMCacheWorldSize is the world_size of an LMCache prefetch:
	// an engine without tensor parallelism.
	DefaultLMCacheWorldSize = 1
)

// ErrInvalidOption is wrapped by every configuration error.
var ErrInvalidOption = errors.New("adapter: invalid option")

// Config configures an Adapter.
type Config struct {
	Bind string // ZeroMQ endpoint to bind the PULL socket at (the worker's hint endpoint); required
	// Engine (EngineSGLang or EngineVLLM) and EngineURL (its HTTP base
	// URL, e.g. http://127.0.0.1:30000) name the engine beside the
	// adapter: required for PrefetchTarget TargetEngine, and the only
	// place a retain goes (without them retains are dropped unsupported).
	Engine    string
	EngineURL string
	// PrefetchTarget is what a prefetch becomes: TargetEngine,
	// TargetDynamo or TargetLMCache (DefaultPrefetchTarget).
	PrefetchTarget string
	// FrontendURL is the Dynamo frontend's HTTP base URL, e.g.
	// http://dynamo-frontend:8000; required for TargetDynamo.
	FrontendURL string
	// LMCacheURL is the HTTP base URL of LMCache's multi-process server on
	// the worker's node, e.g. http://127.0.0.1:8080; required for
	// TargetLMCache.
	LMCacheURL string
	// LMCacheWorldSize is the world_size LMCache registered the model's KV
	// layout under: the engine's tensor-parallel size
	// (DefaultLMCacheWorldSize).
	LMCacheWorldSize int
	// Model names the served model when a hint carries none (vLLM, the
	// Dynamo frontend and LMCache need one).
	Model string
	// MaxInflight: concurrent engine calls (DefaultMaxInflight).
	MaxInflight int
	// QueueSize: hints waiting for a call (DefaultCallQueueSize).
	QueueSize int
	// CallTimeout bounds each engine call (DefaultCallTimeout).
	CallTimeout time.Duration
	// PrefetchTTL is the vllm.set_priority TTL of a prefetch, at least
	// the time left until the hint expires (DefaultPriorityTTL).
	PrefetchTTL time.Duration
	// PrefetchValue is the vllm.set_priority value of a prefetch
	// (DefaultPrefetchValue), >= 1.
	PrefetchValue int64
	// EnginePriority, when set, is sent as the request's scheduling
	// priority: the lowest the engine's policy offers (vLLM: a large
	// value under --scheduling-policy priority; SGLang: the low end under
	// --enable-priority-scheduling). Unset: none is sent, as both engines
	// reject or ignore one without their priority scheduling.
	EnginePriority *int64
	// DedupWindow: message ids remembered to drop repeats
	// (receiver.DefaultDedupWindow).
	DedupWindow int
	// CurveSecretKey makes the socket a CURVE server (Z85, 40 characters).
	CurveSecretKey string
	// RetryDelay is the first retry wait (DefaultEngineRetryDelay).
	RetryDelay time.Duration
	// WorkerID, when set, drops prefetches whose worker_id names another
	// worker (receiver other_worker): an endpoint listed by two records,
	// or reused by a new worker, would otherwise warm another's prompts.
	WorkerID uint64
	// QueueTokens bounds the prompt tokens of hints queued or in flight
	// (DefaultQueueTokens); past it a hint is dropped (queue_full).
	QueueTokens int
	// MaxMessageBytes bounds one hint message (DefaultMaxMessageBytes).
	MaxMessageBytes int
	// MaxHintLife: a hint expiring later than this from its arrival is
	// acted on as if it expired then (DefaultMaxHintLife).
	MaxHintLife time.Duration
}

func (c *Config) defaults() {
	if c.PrefetchTarget == "" {
		c.PrefetchTarget = DefaultPrefetchTarget
	}
	if c.LMCacheWorldSize == 0 {
		c.LMCacheWorldSize = DefaultLMCacheWorldSize
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultCallQueueSize
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.PrefetchTTL == 0 {
		c.PrefetchTTL = DefaultPriorityTTL
	}
	if c.PrefetchValue == 0 {
		c.PrefetchValue = DefaultPrefetchValue
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = receiver.DefaultDedupWindow
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultEngineRetryDelay
	}
	if c.QueueTokens == 0 {
		c.QueueTokens = DefaultQueueTokens
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxHintLife == 0 {
		c.MaxHintLife = DefaultMaxHintLife
	}
}

func (c *Config) validate() error {
	switch {
	case c.Bind == "":
		return fmt.Errorf("%w: no bind endpoint", ErrInvalidOption)
	case c.Engine == "" && c.PrefetchTarget == TargetEngine:
		return fmt.Errorf("%w: no engine for prefetch target %s", ErrInvalidOption, TargetEngine)
	case c.Engine != "" && c.Engine != EngineSGLang && c.Engine != EngineVLLM:
		return fmt.Errorf("%w: engine %q, want %s or %s", ErrInvalidOption, c.Engine, EngineSGLang, EngineVLLM)
	case !slices.Contains(prefetchTargets, c.PrefetchTarget):
		return fmt.Errorf("%w: prefetch target %q, want one of %s", ErrInvalidOption, c.PrefetchTarget, strings.Join(prefetchTargets, ", "))
	case c.LMCacheWorldSize < 1:
		return fmt.Errorf("%w: LMCache world size %d, want >= 1", ErrInvalidOption, c.LMCacheWorldSize)
	case c.MaxInflight < 1:
		return fmt.Errorf("%w: max inflight %d, want >= 1", ErrInvalidOption, c.MaxInflight)
	case c.QueueSize < 1:
		return fmt.Errorf("%w: queue size %d, want >= 1", ErrInvalidOption, c.QueueSize)
	case c.CallTimeout < 0, c.PrefetchTTL < 0, c.RetryDelay < 0, c.MaxHintLife < 0:
		return fmt.Errorf("%w: negative duration", ErrInvalidOption)
	case c.PrefetchValue < 1:
		return fmt.Errorf("%w: prefetch value %d, want >= 1", ErrInvalidOption, c.PrefetchValue)
	case c.DedupWindow < 1:
		return fmt.Errorf("%w: dedup window %d, want >= 1", ErrInvalidOption, c.DedupWindow)
	case c.QueueTokens < 1:
		return fmt.Errorf("%w: queue tokens %d, want >= 1", ErrInvalidOption, c.QueueTokens)
	case c.MaxMessageBytes < 1:
		return fmt.Errorf("%w: max message bytes %d, want >= 1", ErrInvalidOption, c.MaxMessageBytes)
	}
	for _, u := range []struct {
		name, url string
		need      bool
	}{
		{"engine", c.EngineURL, c.Engine != ""},
		{"Dynamo frontend", c.FrontendURL, c.PrefetchTarget == TargetDynamo},
		{"LMCache", c.LMCacheURL, c.PrefetchTarget == TargetLMCache},
	} {
		if !u.need && u.url == "" {
			continue
		}
		if p, err := url.Parse(u.url); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%w: %s URL %q, want http://host:port", ErrInvalidOption, u.name, u.url)
		}
	}
	return nil
}

// Option configures what is not policy: clock, logger, HTTP client,
// counters.
type Option func(*Adapter) error

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(a *Adapter) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		a.log = l
		return nil
	}
}

// WithClock sets the clock expiry is judged by (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *Adapter) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		a.now = now
		return nil
	}
}

// WithHTTPClient sets the client engine calls use (default: one with
// keep-alive connections for MaxInflight callers).
func WithHTTPClient(c *http.Client) Option {
	return func(a *Adapter) error {
		if c == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		a.client = c
		return nil
	}
}

// WithCounters counts into c (default metrics.NewAdapter()).
func WithCounters(c *metrics.Adapter) Option {
	return func(a *Adapter) error {
		if c == nil {
			return fmt.Errorf("%w: nil counters", ErrInvalidOption)
		}
		a.counters = c
		return nil
	}
}

// job is one queued call.
type job struct {
	action   string
	w        warmUp
	deadline time.Time // no attempt starts at or after it
}

// size is what j holds against QueueTokens: its token ids, and a chat
// body at 4 bytes a token (an id's size in memory).
func (j job) size() int64 { return int64(len(j.w.tokens) + len(j.w.body)/4) }

// Adapter is a bound hint socket and the engine calls it makes. Run
// serves it.
type Adapter struct {
	cfg      Config
	recv     *receiver.Receiver
	client   *http.Client
	counters *metrics.Adapter
	log      *slog.Logger
	now      func() time.Time
	queue    chan job
	tokens   atomic.Int64 // prompt tokens of the jobs queued or in flight (QueueTokens)
	revs     *revisions
	base     string      // EngineURL without a trailing slash
	frontend string      // FrontendURL, likewise
	lmcache  string      // LMCacheURL, likewise
	caller   *Caller     // makes every target's calls (caller.go)
	running  atomic.Bool // Run is receiving (/readyz)
}

// New validates cfg and binds the hint socket ("tcp://127.0.0.1:*" picks
// a free port; Endpoint tells which). Nothing runs until Run.
func New(cfg Config, opts ...Option) (*Adapter, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Adapter{cfg: cfg, log: slog.Default(), now: time.Now, counters: metrics.NewAdapter(),
		revs: newRevisions(defaultRevisionClaims), base: strings.TrimRight(cfg.EngineURL, "/"),
		frontend: strings.TrimRight(cfg.FrontendURL, "/"), lmcache: strings.TrimRight(cfg.LMCacheURL, "/")}
	for _, o := range opts {
		if err := o(a); err != nil {
			return nil, err
		}
	}
	if a.client == nil {
		a.client = NewHTTPClient(cfg.MaxInflight)
	}
	a.caller = &Caller{Client: a.client, Peer: "engine", Timeout: cfg.CallTimeout, RetryDelay: cfg.RetryDelay,
		Log: a.log, Now: func() time.Time { return a.now() }, LogAttrs: []any{"engine", cfg.Engine},
		OnRetry: a.counters.Retries.Inc, OnFailed: func(r string) { a.counters.Failed.Inc(r) },
		OnAnswer: a.counters.CallTimes.Observe}
	a.queue = make(chan job, cfg.QueueSize)
	ropts := []receiver.Option{receiver.WithDedupWindow(cfg.DedupWindow), receiver.WithLogger(a.log),
		receiver.WithClock(func() time.Time { return a.now() }), receiver.WithMaxMessageSize(cfg.MaxMessageBytes)}
	if cfg.WorkerID != 0 {
		ropts = append(ropts, receiver.WithWorkerID(cfg.WorkerID))
	}
	if cfg.CurveSecretKey != "" {
		ropts = append(ropts, receiver.WithCurveServer(cfg.CurveSecretKey))
	}
	r, err := receiver.New(cfg.Bind, a.handle, ropts...)
	if err != nil {
		if errors.Is(err, receiver.ErrInvalidOption) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		return nil, err
	}
	a.recv = r
	return a, nil
}

// Endpoint is the bound hint endpoint.
func (a *Adapter) Endpoint() string { return a.recv.Endpoint() }

// Counters are the adapter's counters; ReceiverCounters the socket's
// (received, invalid, duplicate, expired).
func (a *Adapter) Counters() *metrics.Adapter          { return a.counters }
func (a *Adapter) ReceiverCounters() *metrics.Receiver { return a.recv.Counters() }

// Close releases the socket of an Adapter that never ran.
func (a *Adapter) Close() { a.recv.Close() }

// Run receives hints and calls the engine until ctx ends; it then stops
// taking hints, cancels the calls in flight, counts what was still
// queued as dropped (closed) and returns. A socket error ends it with
// that error.
func (a *Adapter) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range a.cfg.MaxInflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.work(ctx)
		}()
	}
	a.running.Store(true)
	err := a.recv.Run(ctx)
	a.running.Store(false)
	cancel()
	wg.Wait()
	for {
		select {
		case j := <-a.queue:
			a.tokens.Add(-j.size())
			a.counters.Dropped.Inc(metrics.AdapterDropClosed)
		default:
			return err
		}
	}
}

// handle runs on the socket's goroutine: it turns a hint into a job and
// queues it without ever waiting.
func (a *Adapter) handle(_ context.Context, h receiver.Hint) {
	now := a.now()
	var j job
	switch {
	case h.Prefetch != nil:
		j = a.prefetchJob(h.Prefetch, h.MessageID, now)
	case h.Retain != nil:
		p := h.Retain
		if a.cfg.Engine != EngineVLLM {
			// SGLang's HTTP API has no per-request cache priority or pin
			// to carry a retain with (see docs/adapter.md): a warm-up
			// alone would not keep the pages past the radix cache's LRU.
			// Without an engine there is nothing to carry it at all.
			a.counters.Dropped.Inc(metrics.AdapterDropUnsupported)
			a.log.Debug("retain not supported by engine", "engine", a.cfg.Engine, "message_id", h.MessageID)
			return
		}
		j = job{action: receiver.ActionRetain, deadline: time.UnixMilli(p.ExpiresAtMs),
			w: warmUp{tokens: p.TokenIDs, model: p.Model, msgID: h.MessageID, claim: p.ClaimID,
				revision: p.Revision, value: p.Priority, ttl: float64(p.TTLMs) / 1000}}
		j.deadline = a.believable(j.deadline, now)
	default:
		a.counters.Dropped.Inc(metrics.AdapterDropUnsupported)
		a.log.Debug("action not for a worker", "action", h.Type, "message_id", h.MessageID)
		return
	}
	a.enqueue(j)
}

// prefetchJob is the job of prefetch p (message msgID) arriving at now.
func (a *Adapter) prefetchJob(p *schemas.PrefetchPayload, msgID string, now time.Time) job {
	j := job{action: receiver.ActionPrefetch, deadline: time.UnixMilli(p.ExpiresAtMs),
		w: warmUp{tokens: p.TokenIDs, model: p.Model, msgID: msgID, cacheSalt: p.CacheSalt,
			workerID: p.WorkerID, dpRank: p.DpRank}}
	if p.ExpiresAtMs == 0 { // a prefetch without expiry: bounded by one call
		j.deadline = now.Add(a.cfg.CallTimeout)
	}
	j.deadline = a.believable(j.deadline, now)
	if a.cfg.PrefetchTarget == TargetEngine && a.cfg.Engine == EngineVLLM {
		j.w.claim = claimID(p.SessionID, p.RequestID)
		j.w.revision = a.revs.next(j.w.claim, now.UnixMilli())
		j.w.value = a.cfg.PrefetchValue
		j.w.ttl = max(a.cfg.PrefetchTTL, j.deadline.Sub(now)).Seconds()
	}
	return j
}

// SubmitPrefetch queues prefetch p as if it had arrived on the hint
// socket (message id msgID), for a caller in this process that holds the
// conversation's chat request: with PrefetchTarget TargetDynamo and a
// non-empty body, the warm-up is that request cut to one token (see
// chatWarmUp) rather than the token ids. It never waits; a hint it cannot
// take is counted as the socket's would be. It reports whether the hint
// was queued.
func (a *Adapter) SubmitPrefetch(p schemas.PrefetchPayload, msgID string, body json.RawMessage) bool {
	now := a.now()
	if p.ExpiresAtMs != 0 && !now.Before(time.UnixMilli(p.ExpiresAtMs)) {
		a.counters.Dropped.Inc(metrics.AdapterDropExpired)
		return false
	}
	j := a.prefetchJob(&p, msgID, now)
	j.w.body = body
	return a.enqueue(j)
}

// enqueue queues j for a caller, never waiting: a hint the target cannot
// take, or that finds the queue full, is dropped and counted.
func (a *Adapter) enqueue(j job) bool {
	if len(j.w.tokens) == 0 && len(j.w.body) == 0 {
		a.counters.Dropped.Inc(metrics.AdapterDropUnsupported)
		return false
	}
	needModel := a.cfg.Engine == EngineVLLM
	if j.action == receiver.ActionPrefetch {
		needModel = a.cfg.prefetchNeedsModel()
	}
	if needModel && j.w.model == "" {
		j.w.model = a.cfg.Model
		if j.w.model == "" {
			a.counters.Dropped.Inc(metrics.AdapterDropNoModel)
			return false
		}
	}
	n := j.size()
	if a.tokens.Add(n) > int64(a.cfg.QueueTokens) {
		a.tokens.Add(-n)
		a.counters.Dropped.Inc(metrics.AdapterDropQueueFull)
		return false
	}
	select {
	case a.queue <- j:
		a.counters.Accepted.Inc(j.action)
		return true
	default:
		a.tokens.Add(-n)
		a.counters.Dropped.Inc(metrics.AdapterDropQueueFull)
		return false
	}
}

// believable bounds a hint's deadline to MaxHintLife from now, counting
// the hints it shortens (receiver far_future).
func (a *Adapter) believable(deadline, now time.Time) time.Time {
	if limit := now.Add(a.cfg.MaxHintLife); deadline.After(limit) {
		a.counters.FarFuture.Inc()
		return limit
	}
	return deadline
}

func (a *Adapter) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-a.queue:
			a.execute(ctx, j)
			a.tokens.Add(-j.size())
		}
	}
}

// execute makes j's call, retrying a server error or a failed
// connection while the hint has not expired (Caller.Do).
func (a *Adapter) execute(ctx context.Context, j job) {
	var c call
	var err error
	if j.action == receiver.ActionPrefetch {
		c, err = a.prefetchCall(j.w)
	} else {
		c, err = buildCall(a.cfg.Engine, a.base, j.w, a.cfg.EnginePriority)
	}
	if err != nil {
		// The hint's content is what the target refuses (a salt LMCache
		// forbids, a chat request without messages): counted, and logged
		// at debug only, as a sender could send such hints at any rate.
		a.counters.Dropped.Inc(metrics.AdapterDropUnsupported)
		a.log.Debug("request not built", "target", a.cfg.PrefetchTarget, "action", j.action, "message_id", j.w.msgID, "err", err)
		return
	}
	switch reason := a.caller.Do(ctx, c.url, c.header, c.body, j.w.msgID, j.deadline); reason {
	case "":
		a.counters.Calls.Inc(j.action)
		a.log.Debug("hint carried out", "target", c.target, "action", j.action, "message_id", j.w.msgID, "tokens", len(j.w.tokens))
	case CallExpired, CallClosed:
		a.counters.Dropped.Inc(reason)
	}
}

// sameHostRedirects follows a redirect only to the engine's own scheme,
// host and port: the warm-up carries a prompt, and an engine answering
// 307 to elsewhere would have the adapter post it there. A refused
// redirect is returned as the 3xx answer (counted redirected).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if orig := via[0].URL; len(via) > maxRedirects || req.URL.Host != orig.Host || req.URL.Scheme != orig.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
