package lmcachepin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/emit/adapter"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/streams"
)

// Defaults of Config.
const (
	// DefaultInstance is LMCache's own default lmcache_instance_id
	// (docs/source/kv_cache_management/pin.rst): one vLLM instance.
	DefaultInstance = "lmcache_default_instance"
	// DefaultLocation is the storage backend pinned in: LMCache's CPU
	// tier, as the controller's documented example pins.
	DefaultLocation = "LocalCPUBackend"
	// DefaultRepin is how often a held pin is pinned again: below
	// LMCache's default pin_timeout_sec (300 s) by enough for a failed
	// call's retries.
	DefaultRepin = 2 * time.Minute
	// DefaultControllerTimeout bounds one /pin call (or half the re-pin
	// interval, when shorter): the controller asks each worker of the
	// instance over ZeroMQ and answers when they have.
	DefaultControllerTimeout = 5 * time.Second
	// DefaultControllerRetryDelay is the first wait before a retry; it doubles.
	DefaultControllerRetryDelay = 100 * time.Millisecond
	// DefaultMaxInflight caps concurrent /pin calls.
	DefaultMaxInflight = 4
	// DefaultQueueSize bounds the calls waiting; past it a call is
	// dropped (queue_full) and the pin tried again at its next re-pin.
	DefaultQueueSize = 1024
)

// ErrInvalidOption is wrapped by every configuration error.
var ErrInvalidOption = errors.New("lmcachepin: invalid option")

// Config configures a Holder.
type Config struct {
	// URL is the controller's base URL, e.g. http://lmcache-controller:9000; required.
	URL string
	// Instance names the LMCache instance a worker's pins go to;
	// "{worker_id}" and "{dp_rank}" in it are replaced by the serving
	// worker's (DefaultInstance).
	Instance string
	// Location is the storage backend pinned in (DefaultLocation).
	Location string
	// Repin: how often a held pin is pinned again (DefaultRepin); set it
	// below the deployment's pin_timeout_sec.
	Repin       time.Duration
	CallTimeout time.Duration
	RetryDelay  time.Duration
	MaxInflight int
	QueueSize   int
}

func (c *Config) defaults() {
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.Location == "" {
		c.Location = DefaultLocation
	}
	if c.Repin == 0 {
		c.Repin = DefaultRepin
	}
	if c.CallTimeout == 0 {
		// A call may not outlast the re-pin it would be overtaken by.
		c.CallTimeout = min(DefaultControllerTimeout, c.Repin/2)
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultControllerRetryDelay
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
}

// Validate checks c as New will, defaults applied.
func (c Config) Validate() error {
	c.defaults()
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%w: controller URL %q, want http://host:port", ErrInvalidOption, c.URL)
	case c.Repin < 0, c.CallTimeout < 0, c.RetryDelay < 0:
		return fmt.Errorf("%w: negative duration", ErrInvalidOption)
	case c.CallTimeout >= c.Repin:
		return fmt.Errorf("%w: call timeout %v not below the re-pin interval %v", ErrInvalidOption, c.CallTimeout, c.Repin)
	case c.MaxInflight < 1, c.QueueSize < 1:
		return fmt.Errorf("%w: max inflight %d and queue size %d must be at least 1", ErrInvalidOption, c.MaxInflight, c.QueueSize)
	}
	return nil
}

// Option configures what is not policy.
type Option func(*Holder)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(h *Holder) { h.log = l } }

// WithClock sets the clock deadlines are judged by (default time.Now).
func WithClock(now func() time.Time) Option { return func(h *Holder) { h.now = now } }

// WithCounters counts into c (default: a fresh metrics.Families').
func WithCounters(c *metrics.LMCachePins) Option { return func(h *Holder) { h.counters = c } }

// held is one pin this member keeps pinned.
type held struct {
	Record
	tokens []uint32
	until  time.Time
	next   time.Time // its next re-pin
}

// call is one queued /pin.
type call struct {
	slot     string
	body     []byte
	deadline time.Time
}

// Holder holds tool-call pins in LMCache (package doc). It implements
// pins.TokenPins; Run serves it.
type Holder struct {
	cfg      Config
	store    Store
	caller   *adapter.Caller
	counters *metrics.LMCachePins
	log      *slog.Logger
	now      func() time.Time
	queue    chan call

	mu   sync.Mutex
	held map[string]*held // by slot
}

var _ pins.TokenPins = (*Holder)(nil)

// New validates cfg and returns a Holder over store; nothing runs until Run.
func New(cfg Config, store Store, opts ...Option) (*Holder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOption)
	}
	h := &Holder{cfg: cfg, store: store, log: slog.Default(), now: time.Now, held: map[string]*held{},
		queue: make(chan call, cfg.QueueSize)}
	for _, o := range opts {
		o(h)
	}
	if h.counters == nil {
		f := metrics.New()
		h.counters = &f.LMCachePins
	}
	h.caller = &adapter.Caller{Client: adapter.NewHTTPClient(cfg.MaxInflight), Base: strings.TrimRight(cfg.URL, "/"),
		Peer: "lmcache controller", Timeout: cfg.CallTimeout, RetryDelay: cfg.RetryDelay, Log: h.log,
		Now: func() time.Time { return h.now() }, OnRetry: h.counters.Retries.Inc,
		OnFailed: func(r string) { h.counters.Failed.Inc(r) }}
	return h, nil
}

// Instance is the LMCache instance id of a worker's dp rank.
func (h *Holder) Instance(workerID uint64, dpRank uint32) string {
	return strings.NewReplacer("{worker_id}", strconv.FormatUint(workerID, 10),
		"{dp_rank}", strconv.FormatUint(uint64(dpRank), 10)).Replace(h.cfg.Instance)
}

// Target describes where pins go, for run's start-up line.
func (h *Holder) Target() string {
	return fmt.Sprintf("LMCache controller %s POST /pin (instance %q, location %q, re-pinned every %v)",
		h.cfg.URL, h.cfg.Instance, h.cfg.Location, h.cfg.Repin)
}

// Hold records the pin (so a restart resumes it) and queues its first
// /pin. It reports false when the record could not be written: a pin
// hintstream could lose track of is not taken.
func (h *Holder) Hold(ctx context.Context, p pins.TokenPin) bool {
	r := Record{Slot: p.Slot, Trigger: p.Trigger, Instance: h.Instance(p.Worker.WorkerID, p.DpRank),
		Location: h.cfg.Location, UntilMs: p.Until.UnixMilli(), Tokens: packTokens(p.Tokens)}
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	if err := h.store.Put(ctx, r); err != nil {
		h.counters.Skipped.Inc("store")
		h.log.Warn("LMCache pin not recorded, not taken", "slot", p.Slot, "err", err)
		return false
	}
	x := &held{Record: r, tokens: p.Tokens, until: p.Until}
	h.counters.Held.Inc()
	h.mu.Lock()
	h.held[p.Slot] = x
	h.mu.Unlock()
	h.pin(x, h.now())
	return true
}

// Release lets go of slot's pin if it is still trigger's: its record goes
// (so no member re-pins it) and LMCache drops it within pin_timeout_sec.
func (h *Holder) Release(ctx context.Context, slot, trigger string) {
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	h.mu.Lock()
	if x, ok := h.held[slot]; ok && x.Trigger == trigger {
		delete(h.held, slot)
	}
	h.mu.Unlock()
	r, ok, err := h.store.Get(ctx, slot)
	if err != nil {
		h.log.Warn("LMCache pin release not recorded", "slot", slot, "err", err)
		return
	}
	if !ok || r.Trigger != trigger {
		return // released already, or a newer pin took the slot
	}
	if err := h.store.Delete(ctx, slot); err != nil {
		h.log.Warn("LMCache pin release not recorded", "slot", slot, "err", err)
		return
	}
	h.counters.Released.Inc()
	h.log.Debug("LMCache pin released", "slot", slot, "trigger", trigger)
}

// pin queues x's /pin, bounded by its deadline and its next re-pin.
func (h *Holder) pin(x *held, now time.Time) {
	body, err := json.Marshal(pinRequest{InstanceID: x.Instance, Location: x.Location, Tokens: x.tokens})
	if err != nil {
		return // a []uint32 and two strings always marshal
	}
	next := now.Add(h.cfg.Repin)
	h.mu.Lock()
	x.next = next
	h.mu.Unlock()
	select {
	case h.queue <- call{slot: x.Slot, body: body, deadline: minTime(x.until, next)}:
	default:
		h.counters.Calls.Inc(metrics.LMCachePinDropped)
	}
}

// pinRequest is the controller's PinRequest (a pydantic BaseModel:
// instance_id: str, location: str, tokens: list[int]).
type pinRequest struct {
	InstanceID string   `json:"instance_id"`
	Location   string   `json:"location"`
	Tokens     []uint32 `json:"tokens"`
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Run adopts the pins the store holds (those past their deadline are
// deleted and counted lapsed; the others are pinned again at once), then
// makes the calls and re-pins held pins until ctx ends.
func (h *Holder) Run(ctx context.Context) error {
	if err := h.adopt(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range h.cfg.MaxInflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.work(ctx)
		}()
	}
	tick := time.NewTicker(max(min(h.cfg.Repin/8, time.Second), 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			for {
				select {
				case <-h.queue:
					h.counters.Calls.Inc(metrics.LMCachePinClosed)
				default:
					return nil
				}
			}
		case <-tick.C:
			h.repin(ctx)
		}
	}
}

// adopt takes over the store's pins at start.
func (h *Holder) adopt(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 4*streams.DefaultOpTimeout)
	defer cancel()
	recs, err := h.store.List(lctx)
	if err != nil {
		return fmt.Errorf("lmcachepin: read held pins: %w", err)
	}
	now := h.now()
	lapsed, adopted := 0, 0
	for _, r := range recs {
		if !now.Before(time.UnixMilli(r.UntilMs)) {
			if err := h.store.Delete(lctx, r.Slot); err == nil {
				lapsed++
				h.counters.Lapsed.Inc()
			}
			continue
		}
		x := &held{Record: r, tokens: unpackTokens(r.Tokens), until: time.UnixMilli(r.UntilMs)}
		h.mu.Lock()
		_, taken := h.held[r.Slot]
		if !taken {
			h.held[r.Slot] = x
		}
		h.mu.Unlock()
		if !taken {
			adopted++
			h.counters.Held.Inc()
			h.pin(x, now)
		}
	}
	h.log.Info("LMCache pins taken over from the store", "adopted", adopted, "lapsed", lapsed)
	return nil
}

// repin pins again the held pins due, after checking each is still in
// the store (another member's Release deletes it); a pin past its
// deadline is let go (lapsed).
func (h *Holder) repin(ctx context.Context) {
	now := h.now()
	var due []*held
	h.mu.Lock()
	for _, x := range h.held {
		if !now.Before(x.next) || !now.Before(x.until) {
			due = append(due, x)
		}
	}
	h.mu.Unlock()
	for _, x := range due {
		if ctx.Err() != nil {
			return
		}
		gctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
		r, ok, err := h.store.Get(gctx, x.Slot)
		cancel()
		switch {
		case err != nil:
			h.log.Warn("LMCache pin record not read; re-pin later", "slot", x.Slot, "err", err)
			h.mu.Lock()
			x.next = now.Add(time.Second)
			h.mu.Unlock()
		case !ok || r.Trigger != x.Trigger:
			h.forget(x) // released by the member that took the next turn
		case !now.Before(x.until):
			h.forget(x)
			dctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
			if h.store.Delete(dctx, x.Slot) == nil {
				h.counters.Lapsed.Inc()
				h.log.Debug("LMCache pin lapsed", "slot", x.Slot, "trigger", x.Trigger)
			}
			cancel()
		default:
			h.pin(x, now)
		}
	}
}

func (h *Holder) forget(x *held) {
	h.mu.Lock()
	if h.held[x.Slot] == x {
		delete(h.held, x.Slot)
	}
	h.mu.Unlock()
}

// Held is the number of pins this member keeps pinned.
func (h *Holder) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

func (h *Holder) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-h.queue:
			outcome := h.caller.Do(ctx, "/pin", nil, c.body, c.slot, c.deadline)
			if outcome == "" {
				outcome = metrics.LMCachePinOK
			}
			h.counters.Calls.Inc(outcome)
		}
	}
}
