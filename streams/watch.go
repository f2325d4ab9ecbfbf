package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/internal/retry"
)

// DefaultWatchInterval is how often a Watcher looks for a deleted stream
// whose deletion advisory it missed.
const DefaultWatchInterval = 3 * time.Second

// DefaultRecreateDelay is how long a Watcher leaves a deleted stream
// missing before it creates it again. On a single server the deletion
// advisory goes out before the old stream's files are moved away
// (nats-server v2.15.2, server/stream.go (*stream).stop sends it, then
// (*fileStore).Delete renames the store directory): a stream created in
// that window has its files removed under it, and what is published to it
// is neither stored nor answered. With no delay, each of three runs of
// TestWatcherRecreatedStreamStores under -race lost a recreated stream
// within 20 deletions; 50 ms held over 200, and a second leaves room for a
// loaded server. Publishers get "no responders" meanwhile, as they do
// while the stream is missing anyway.
const DefaultRecreateDelay = time.Second

// Watcher recreates a stream of the set that is deleted while it runs, as
// start-up would have: publishers keep somewhere to publish, and
// consumers reattach to it by themselves (durable ones from the new
// stream's start). What the old stream held is gone; that is the
// deleter's decision, said once in the log.
type Watcher struct {
	nc          *nats.Conn
	js          jetstream.JetStream
	ours        map[string]Config
	log         *slog.Logger
	onRecreated func(stream string)
	delay       time.Duration // DefaultRecreateDelay; tests shorten it

	ctx        context.Context // Run's, for the recreations
	mu         sync.Mutex      // stopped, recreating and wg.Add
	stopped    bool
	recreating map[string]bool
	wg         sync.WaitGroup
}

// NewWatcher watches the named streams of configs (those without a name
// are skipped) through nc, recreating them with js. onRecreated, when
// set, is called once per recreation. log nil means slog.Default().
func NewWatcher(nc *nats.Conn, js jetstream.JetStream, configs []Config, log *slog.Logger, onRecreated func(stream string)) *Watcher {
	if log == nil {
		log = slog.Default()
	}
	ours := map[string]Config{}
	for _, c := range configs {
		if c.Name != "" {
			ours[c.Name] = c
		}
	}
	return &Watcher{nc: nc, js: js, ours: ours, log: log, onRecreated: onRecreated, delay: DefaultRecreateDelay,
		recreating: map[string]bool{}}
}

// Run listens for deletion advisories and also looks for missing streams
// every DefaultWatchInterval: the server sends the advisory from the
// dying stream's own queue and may drop it. It fails only when it cannot
// subscribe. When ctx ends it stops and waits for the recreations under
// way, then returns nil.
func (w *Watcher) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	w.ctx = ctx
	sub, err := w.nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.DELETED.*", func(m *nats.Msg) {
		if cfg, ok := w.ours[m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]]; ok {
			w.recreate(cfg)
		}
	})
	if err != nil {
		cancel()
		return fmt.Errorf("streams: watch deletions: %w", err)
	}
	defer func() {
		_ = sub.Unsubscribe()
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		cancel()
		w.wg.Wait()
	}()
	tick := time.NewTicker(DefaultWatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for name, cfg := range w.ours {
			octx, cancel := context.WithTimeout(ctx, DefaultOpTimeout)
			_, err := w.js.Stream(octx, name)
			cancel()
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				w.recreate(cfg)
			}
		}
	}
}

// recreate starts recreating cfg's stream unless that is under way.
func (w *Watcher) recreate(cfg Config) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.recreating[cfg.Name] {
		return
	}
	w.recreating[cfg.Name] = true
	w.wg.Add(1)
	go w.recreateStream(cfg)
}

// recreateStream creates cfg's stream again once it has been missing for
// the delay (DefaultRecreateDelay), retrying until Run ends: the server
// announces a deletion before it has finished removing the store, and
// may refuse a new stream of that name meanwhile.
func (w *Watcher) recreateStream(cfg Config) {
	defer w.wg.Done()
	defer func() {
		w.mu.Lock()
		delete(w.recreating, cfg.Name)
		w.mu.Unlock()
	}()
	settle := time.NewTimer(w.delay)
	select {
	case <-w.ctx.Done():
		settle.Stop()
		return
	case <-settle.C:
	}
	wait := retry.Doubling(50*time.Millisecond, time.Second)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.ctx, DefaultOpTimeout)
		_, outcome, err := Ensure(ctx, w.js, cfg, WithLogger(slog.New(slog.DiscardHandler)))
		cancel()
		if err == nil && outcome != Created {
			// Still there (the advisory can precede the removal), or someone
			// else recreated it; the periodic check catches a late removal.
			return
		}
		if err == nil {
			if w.onRecreated != nil {
				w.onRecreated(cfg.Name)
			}
			w.log.Warn("stream was deleted; recreated it empty, consumers resume on it", "stream", cfg.Name)
			return
		}
		if attempt == 20 { // about 10 s: say so once, keep trying
			w.log.Error("stream was deleted and cannot be recreated yet; consumers wait for it",
				"stream", cfg.Name, "err", err)
		}
		if !retry.Wait(w.ctx, wait.NextBackOff()) {
			return
		}
	}
}
