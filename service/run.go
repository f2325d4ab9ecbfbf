package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// One lifecycle: every long-running part of a Service (the
// consumers, the registry watcher, the snapshotter, the reclaimer, the
// stream watcher, the renewal ticker, the affinity writer, the hint
// senders and the HTTP server) is a Run(ctx) error that returns when ctx
// is cancelled, after draining what it must, or on a fatal error. They
// all run under one errgroup. Start sets each part up (so that start-up
// errors and order stay Start's) and hands it to the group; Stop cancels
// the group and waits for it.
//
// Shutdown keeps an order: requests stop before the affinity writer that
// records their choices, the consumers before the shutdown snapshot,
// everything that sends before the senders close. So each part runs under
// the context of its stage, and the group's supervisor, once the group's
// context ends (Stop, or a part's fatal error), cancels the stages one
// after the other, each once the one before has returned.

// Timeouts of the service's own operations; each derives from the
// context of the part doing it, so shutdown cuts it short.
const (
	// DefaultPendingTimeout bounds the backlog lookup of a /metrics scrape.
	DefaultPendingTimeout = time.Second
	// DefaultSnapshotLoadTimeout bounds reading a snapshot at start-up.
	DefaultSnapshotLoadTimeout = 10 * time.Minute
	// DefaultSnapshotSaveTimeout bounds one periodic snapshot save.
	DefaultSnapshotSaveTimeout = 5 * time.Minute
	// DefaultReclaimTimeout bounds one pass of the snapshot reclaim.
	DefaultReclaimTimeout = time.Minute
	// DefaultShutdownTimeout bounds the drain (queued hints, the shutdown
	// snapshot, HTTP requests in progress) when a part's fatal error, not
	// Stop, ends the service; Stop's ctx bounds it otherwise. It is also
	// the --shutdown-timeout default.
	DefaultShutdownTimeout = 3 * time.Second
)

// Stages of the shutdown, in order; the parts of one stage stop together.
const (
	stageRequests = iota
	stageAffinity
	stageResponses
	stageRenewals
	stageState     // KV-event and load consumers
	stageSnapshots // after the KV consumer: the shutdown snapshot covers all it applied
	stageReclaim
	stageStreams // the stream watcher
	stageRegistry
	stageSenders
	stageHTTP
	numStages
)

// lifecycle is the Service's errgroup and its stages.
type lifecycle struct {
	group  *errgroup.Group
	ctx    context.Context // the group's: ends on Stop or a fatal error
	cancel context.CancelFunc
	stages [numStages]stage

	mu          sync.Mutex
	drain       context.Context // Stop's ctx, bounding the drain
	drainCancel context.CancelFunc
	firstErr    error
}

type stage struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool // cancelled: parts handed over now run at once to their end
	wg     sync.WaitGroup
}

func newLifecycle() *lifecycle {
	root, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(root)
	lc := &lifecycle{group: g, ctx: gctx, cancel: cancel}
	for i := range lc.stages {
		lc.stages[i].ctx, lc.stages[i].cancel = context.WithCancel(context.Background())
	}
	g.Go(lc.supervise)
	return lc
}

// supervise ends the stages in order once the group's context ends.
func (lc *lifecycle) supervise() error {
	<-lc.ctx.Done()
	for i := range lc.stages {
		st := &lc.stages[i]
		st.mu.Lock()
		st.closed = true
		st.cancel()
		st.mu.Unlock()
		st.wg.Wait()
	}
	return nil
}

// run hands a part to the group under its stage. A part's error ends the
// service (every part is stopped, in order) and is Err's.
func (lc *lifecycle) run(stageNo int, name string, run func(context.Context) error) {
	st := &lc.stages[stageNo]
	st.mu.Lock()
	if st.closed {
		// Its stage is over (a fatal error during Start): let it stop now.
		st.mu.Unlock()
		_ = run(st.ctx)
		return
	}
	st.wg.Add(1)
	st.mu.Unlock()
	lc.group.Go(func() error {
		defer st.wg.Done()
		if err := run(st.ctx); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
			lc.mu.Lock()
			if lc.firstErr == nil {
				lc.firstErr = err
			}
			lc.mu.Unlock()
			return err
		}
		return nil
	})
}

// drainContext bounds what a part does after its context ended: Stop's
// ctx, or DefaultShutdownTimeout after a fatal error.
func (lc *lifecycle) drainContext() context.Context {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.drain == nil {
		// No Stop yet: a fatal error ends the service.
		lc.drain, lc.drainCancel = context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	}
	return lc.drain
}

// stop cancels the group, draining within ctx, and waits for every part.
func (lc *lifecycle) stop(ctx context.Context) error {
	lc.mu.Lock()
	if lc.drain == nil {
		lc.drain = ctx
	}
	lc.mu.Unlock()
	lc.cancel()
	err := lc.group.Wait()
	lc.mu.Lock()
	if lc.drainCancel != nil {
		lc.drainCancel()
	}
	lc.mu.Unlock()
	return err
}

// err is the first part's fatal error, nil while every part runs.
func (lc *lifecycle) err() error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.firstErr
}

// Done is closed when the service stops: on Stop, or when a part fails
// (Err says why). Nil before Start.
func (s *Service) Done() <-chan struct{} {
	if s.lc == nil {
		return nil
	}
	return s.lc.ctx.Done()
}

// Err is the fatal error that stopped the service, nil while it runs and
// after a plain Stop.
func (s *Service) Err() error {
	if s.lc == nil {
		return nil
	}
	return s.lc.err()
}

// stageContext is the context the parts of stage n run under.
func (lc *lifecycle) stageContext(n int) context.Context { return lc.stages[n].ctx }

// runSenders closes the hint senders once ctx ends, flushing what is
// queued within the drain.
func (s *Service) runSenders(ctx context.Context) error {
	<-ctx.Done()
	if err := s.pool.Close(s.lc.drainContext()); err != nil {
		s.log.Warn("hint senders closed before flushing", "err", err)
	}
	return nil
}

// runHTTP closes the HTTP server once ctx ends, letting requests in
// progress finish within the drain.
func (s *Service) runHTTP(ctx context.Context) error {
	<-ctx.Done()
	if err := s.http.Close(s.lc.drainContext()); err != nil {
		s.log.Warn("http server close", "err", err)
	}
	return nil
}
