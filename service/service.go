package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/hintstream/hintstream/agents"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/ahead"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/engine"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/natsconn"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/pins"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/retention"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/tooltime"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Service is one running hintstream instance.
type Service struct {
	cfg Config
	log *slog.Logger

	Counters *metrics.Families
	Index    *kvevents.Index
	Loads    *routing.LoadTable
	Selector *routing.Selector

	embedded *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	registry *registry.Registry
	pool     *actions.Pool
	kv       *consumers.StateConsumer
	holding  *engine.Holding // gate of the index: registered workers first
	grace    workerGrace     // grace.go
	engine   *engine.Engine  // the decisions, shared with replay
	load     *consumers.StateConsumer
	requests *consumers.RequestConsumer
	affinity *consumers.AffinityWriter // nil when off
	// responses is nil when pins are off.
	responses *consumers.ResponseConsumer
	// Learner holds the learned tool times (nil when pins are off).
	Learner *tooltime.Learner
	// Retention is the retention planner, nil when off (after Start).
	Retention *retention.Planner
	// Ahead is the header-free prefetch scheduler, nil when off.
	Ahead *ahead.Scheduler
	// agents follows agent programs (nil when Config.Agents is off).
	agents *agents.Tracker

	lastSnapshot atomic.Uint64 // KV stream sequence the last saved snapshot covers
	// lastSnapCreated is the stream incarnation (creation, Unix ns)
	// lastSnapshot counts in, and indexGap why the index is incomplete
	// (nil: complete; gaps.go).
	lastSnapCreated atomic.Int64
	indexGap        atomic.Pointer[string]
	// kvExtra reads Config.KVStreams; snapHeader is the loaded snapshot's
	// headers (kvstreams.go).
	kvExtra    []*consumers.StateConsumer
	snapHeader nats.Header

	// lc runs every long-running part under one errgroup (run.go).
	lc *lifecycle

	// streamsSub watches for our streams being deleted (see watchStreams);
	// recreations run under watchCtx, the stream watcher's.
	streamsSub  *nats.Subscription
	watchCtx    context.Context
	watchCancel context.CancelFunc
	watchMu     sync.Mutex // guards watchStop, recreating and watchWG.Add
	watchStop   bool
	recreating  map[string]bool // stream names being recreated
	watchWG     sync.WaitGroup

	http    *observe.Server
	latency *observe.Histogram
	ready   atomic.Bool

	// endpoints counts the registered records listing each endpoint, and
	// fileLimit is the RLIMIT_NOFILE in effect (bounds.go).
	endpoints endpointRefs
	fileLimit uint64

	// served is Config.Models, the models this member serves (see
	// cluster.go).
	served registry.Served
	// purgeOff is set once the KV-event stream proves foreign: it is
	// never purged (see purgeKVEvents).
	purgeOff atomic.Bool

	stopOnce sync.Once
}

// New returns a Service; Start connects and begins consuming.
func New(cfg Config) *Service {
	cfg = cfg.Defaults()
	return &Service{
		cfg:      cfg,
		log:      cfg.Logger,
		Counters: metrics.New(),
		Index:    cfg.NewIndex(cfg.Logger),
		Loads:    routing.NewLoadTable(),
	}
}

// ClientURL is the NATS URL in use (the embedded server's when started
// without one).
func (s *Service) ClientURL() string {
	if s.embedded != nil {
		return s.embedded.ClientURL()
	}
	return s.cfg.NATSURL
}

// JetStream returns the service's JetStream context (after Start).
func (s *Service) JetStream() jetstream.JetStream { return s.js }

// Registry returns the live worker registry (after Start).
func (s *Service) Registry() *registry.Registry { return s.registry }

// Pool returns the hint senders (after Start).
func (s *Service) Pool() *actions.Pool { return s.pool }

// Start connects, makes sure the streams exist, loads the registry and
// starts the consumers. On error, everything already started is stopped.
func (s *Service) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			err = s.explainPermission(err)
			s.Stop(context.Background())
		}
	}()
	s.lc = newLifecycle()
	// The configuration is validated once, before anything is connected.
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if err := s.ensureFileLimit(); err != nil {
		return err
	}
	s.served = registry.ServedModels(s.cfg.Models)
	url := s.cfg.NATSURL
	if url == "" {
		if err := os.MkdirAll(s.cfg.EmbeddedDir, 0o755); err != nil {
			return fmt.Errorf("embedded store: %w", err)
		}
		port := s.cfg.EmbeddedPort
		if port == 0 {
			port = -1
		}
		s.embedded, err = natsembed.Start(natsembed.Options{StoreDir: s.cfg.EmbeddedDir, Port: port})
		if err != nil {
			return err
		}
		url = s.embedded.ClientURL()
		s.log.Info("embedded JetStream server started", "url", url, "store", s.cfg.EmbeddedDir)
	}
	ncfg := s.cfg.NATS
	ncfg.URL = url
	if ncfg.Logger == nil {
		ncfg.Logger = s.log
	}
	if s.nc, err = natsconn.Dial(ctx, ncfg); err != nil { // retries until ncfg.ConnectTimeout
		return err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return err
	}
	s.js = placed(s.js, s.cfg.Placement) // buckets and object store get the cluster's replicas
	fctx, done := s.failFast(ctx)
	_, err = streams.EnsureSet(fctx, s.js, s.cfg.Streams,
		streams.WithUpdate(s.cfg.UpdateStreams), streams.WithLogger(s.log))
	done()
	if err != nil {
		if perm := s.explainPermission(err); errors.Is(perm, ErrPermissionDenied) {
			return perm // asking the account whether JetStream is on would only be refused again
		}
		return natsconn.ExplainJetStream(ctx, s.nc, s.js, err)
	}
	if err := s.watchStreams(); err != nil {
		return err
	}

	// Before anything holds the index: a snapshot that fails to load
	// leaves a fresh one in its place.
	startSeq := s.loadSnapshot(ctx)
	s.startHolding()
	s.startReclaim()
	s.latency = &observe.Histogram{}
	popts := []actions.PoolOption{actions.WithQueueSize(s.cfg.SenderQueue), actions.WithLogger(s.log),
		actions.WithMaxHeld(max(s.cfg.SenderMaxHeld, 0)), actions.WithSettleDelay(max(s.cfg.SenderSettleDelay, 0)),
		actions.WithCurve(s.curveServerKey), actions.WithSentHook(s.latency.Observe)}
	if s.cfg.CurveClientPublicKey != "" {
		popts = append(popts, actions.WithCurveClientKeys(s.cfg.CurveClientPublicKey, s.cfg.CurveClientSecretKey))
	}
	s.pool = actions.NewPool(append(popts, s.budgetOptions()...)...)
	s.lc.run(stageSenders, "hint senders", s.runSenders)
	if err := s.pool.Err(); err != nil {
		return err
	}
	if s.cfg.HTTPAddr != "" {
		s.http, err = observe.Start(observe.Options{Addr: s.cfg.HTTPAddr, Pprof: s.cfg.Pprof, Logger: s.log},
			observe.Sources{Counters: s.Counters, Index: s.Index.Stats, Endpoints: s.pool.Stats,
				Ready: s.ready.Load, IndexComplete: s.IndexComplete, Pending: s.pending, Latency: s.latency, TopTools: s.cfg.MetricsTopTools, Budget: s.pool.Budget,
				// Called only once ready, when registry, selector and learner are set.
				Workers: func() []schemas.WorkerRecord { return s.registry.Workers() },
				Loads:   s.Loads.Get,
				Stale:   s.Index.StaleWorkers,
				Choose: func(r *schemas.RequestEvent) (routing.Candidate, []routing.Candidate, error) {
					return s.Selector.Choose(r)
				},
				ToolTime: func() ([]tooltime.ToolStats, bool) {
					if s.Learner == nil { // pins off
						return nil, false
					}
					return s.Learner.Snapshot(), true
				},
				Retention: func() ([]retention.Pinned, retention.Stats, bool) {
					if s.Retention == nil { // planner off
						return nil, retention.Stats{}, false
					}
					return s.Retention.Top(observe.RetentionTop), s.Retention.Stats(), true
				},
				Ahead: func() (ahead.Stats, bool) {
					if s.Ahead == nil { // header-free prefetch off
						return ahead.Stats{}, false
					}
					return s.Ahead.Stats(), true
				},
				Outcomes: s.outcomesView})
		if err != nil {
			return err
		}
		s.lc.run(stageHTTP, "http server", s.runHTTP)
		s.log.Info("serving /metrics, /healthz, /readyz", "addr", s.http.Addr(), "pprof", s.cfg.Pprof)
	}
	s.registry, err = registry.Open(ctx, s.js, append([]registry.Option{registry.WithBucket(s.cfg.RegistryBucket),
		registry.WithLogger(s.log), registry.WithOnChange(s.onWorkerChange)}, s.registryOptions()...)...)
	if err != nil {
		return err
	}
	s.lc.run(stageRegistry, "registry watcher", s.registry.Run)
	select {
	case <-s.registry.Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	s.pruneUnregistered()
	var sender actions.Sender = s.pool
	if s.cfg.HintsLog != nil {
		sender = actions.NewRecorder(s.cfg.HintsLog, s.pool)
	}
	pinDeps, err := s.pinStores(ctx)
	if err != nil {
		return err
	}
	aff, err := s.startAffinity(ctx)
	if err != nil {
		return err
	}
	observer, err := s.retentionPlanner(pinDeps, sender) // retention_planner.go
	if err != nil {
		return err
	}
	sched, err := s.aheadScheduler() // ahead.go
	if err != nil {
		return err
	}
	s.engine, err = engine.NewEngine(s.cfg.Decisions, engine.EngineDeps{Index: s.Index, KV: s.holding, Loads: s.Loads,
		Workers: modelWorkers{s}, Sender: sender, Pins: pinDeps, Affinity: aff, KeepWorker: s.keepWorkerFunc(),
		Counters: s.Counters, Log: s.log, Observer: observer, Ahead: sched})
	if err != nil {
		return err
	}
	if sched != nil {
		s.lc.run(stageRenewals, "header-free prefetch ticks", s.runAheadTicks)
	}
	s.Selector = s.engine.Selector()
	pinning := s.engine.Pins()
	if pinning != nil {
		s.Learner = pinning.Learner
	}

	dlq := consumers.NewDeadLetter(s.js, s.cfg.DeadLetterPrefix)
	st := s.cfg.Streams
	s.kv = consumers.NewStateConsumer(s.js, consumers.StateConfig{Kind: "kv_events", Stream: st.KVEvents.Name,
		Filter: st.KVEvents.Subjects, Shards: s.cfg.KVApplyShards, StartSeq: startSeq},
		consumers.ApplyMessages(s.engine.KV), dlq, s.Counters, s.log)
	s.load = consumers.NewStateConsumer(s.js, consumers.StateConfig{Kind: "load", Stream: st.Load.Name,
		Filter: st.Load.Subjects}, consumers.ApplyMessages(s.engine.Load), dlq, s.Counters, s.log)
	// nil: responses only for the agents. Header-free prefetches learn
	// from responses too.
	var respond consumers.Decide
	if pinning != nil || sched != nil {
		respond = s.engine.Response
	}
	decideRequest, decideResponse, err := s.startAgents(ctx, s.engine.Request, respond)
	if err != nil {
		return err
	}
	s.requests = consumers.NewRequestConsumer(s.js, consumers.RequestConfig{
		Stream: st.Requests.Name, Durable: s.cfg.RequestsDurable, Filter: s.consumerFilter(st.Requests.Subjects, streams.RequestPrefix),
		DeliverNew: !s.cfg.RequestsDeliverAll, AckWait: s.cfg.AckWait, MaxAckPending: s.cfg.MaxAckPending,
	}, decideRequest, dlq, s.Counters, s.log)
	if pinning != nil || s.agents != nil || sched != nil {
		s.responses = consumers.NewResponseConsumer(s.js, consumers.ResponseConfig{
			Stream: st.Responses.Name, Durable: s.cfg.ResponsesDurable, Filter: s.consumerFilter(st.Responses.Subjects, streams.ResponsePrefix),
			DeliverNew: !s.cfg.RequestsDeliverAll, AckWait: s.cfg.AckWait, MaxAckPending: s.cfg.MaxAckPending,
		}, decideResponse, dlq, s.Counters, s.log)
	}
	for _, c := range []*consumers.StateConsumer{s.kv, s.load} {
		if err := c.Start(ctx); err != nil {
			c.Stop() // what a half start left (its shards)
			return err
		}
		s.lc.run(stageState, "state consumer", c.Run)
	}
	if err := s.startExtraKV(ctx, consumers.ApplyMessages(s.engine.KV), dlq); err != nil {
		return err
	}
	// Hints chosen from a half-built index would go to the wrong worker:
	// take requests only once the state streams are applied up to now.
	if err := s.WaitCaughtUp(ctx); err != nil {
		return fmt.Errorf("catching up on KV events and load: %w", err)
	}
	if err := s.startAgentEvents(ctx, dlq); err != nil {
		return err
	}
	if err := s.requests.Start(ctx); err != nil {
		return err
	}
	s.lc.run(stageRequests, "requests consumer", s.requests.Run)
	if s.responses != nil {
		if err := s.responses.Start(ctx); err != nil {
			return err
		}
		s.lc.run(stageResponses, "responses consumer", s.responses.Run)
		s.startRenewals(pinning)
	}
	if s.cfg.SnapshotInterval > 0 {
		s.lc.run(stageSnapshots, "snapshotter", s.runSnapshots)
	}
	s.ready.Store(true)
	s.log.Info("hintstream running", "nats", url, "index_blocks", s.Index.Stats().DeviceBlocks, "requests", st.Requests.Subjects,
		"kv_events", st.KVEvents.Subjects, "load", st.Load.Subjects, "registry", s.cfg.RegistryBucket)
	return nil
}

// HTTPAddr is the address /metrics is served on ("" when off).
func (s *Service) HTTPAddr() string {
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}

// Ready reports whether the service has caught up and takes requests.
func (s *Service) Ready() bool { return s.ready.Load() }

// pending reports the group's consumers' backlog, for /metrics.
func (s *Service) pending() map[string]uint64 {
	ctx, cancel := context.WithTimeout(s.lc.ctx, DefaultPendingTimeout)
	defer cancel()
	out := map[string]uint64{}
	st := s.cfg.Streams
	for _, c := range []struct{ stream, name string }{
		{st.Requests.Name, s.cfg.RequestsDurable}, {st.Responses.Name, s.cfg.ResponsesDurable},
	} {
		cons, err := s.js.Consumer(ctx, c.stream, c.name)
		if err != nil {
			continue
		}
		if info, err := cons.Info(ctx); err == nil {
			out[c.name] = info.NumPending + uint64(info.NumAckPending)
		}
	}
	return out
}

// pinStores opens tool-call pins' request index and slot buckets, or
// says once that pins are off (nil).
func (s *Service) pinStores(ctx context.Context) (*pins.Deps, error) {
	if s.cfg.PinEndpoint == "" && !s.cfg.RetainOnWorker {
		s.log.Info("tool-call pins off: DYN_KVM_PIN_ENDPOINT (--pin-endpoint) is unset")
		return nil, nil
	}
	idx, err := pins.OpenRequestIndex(ctx, s.js, "", s.cfg.Streams.Requests.Name, s.cfg.RequestIndexTTL, s.cfg.Limits,
		s.bucketCap(s.cfg.RequestIndexMaxBytes)...)
	if err != nil {
		return nil, err
	}
	slots, err := pins.OpenPinSlots(ctx, s.js, "", append(s.bucketCap(s.cfg.PinSlotsMaxBytes),
		pins.WithSlotLinger(s.cfg.PinSlotLinger), pins.WithSlotMarkerTTL(s.cfg.PinSlotMarkerTTL))...)
	if err != nil {
		return nil, err
	}
	s.log.Info("tool-call pins on", "endpoint", s.cfg.PinEndpoint)
	return &pins.Deps{Endpoint: s.cfg.PinEndpoint, Index: idx, Slots: slots, Workers: s.registry}, nil
}

// WaitCaughtUp waits until the KV-event and load streams, as they are at
// the call, have been applied.
func (s *Service) WaitCaughtUp(ctx context.Context) error {
	if s.kv == nil || s.load == nil {
		return errors.New("service not started")
	}
	if err := s.kv.WaitCaughtUp(ctx); err != nil {
		return err
	}
	if err := s.waitExtraCaughtUp(ctx); err != nil {
		return err
	}
	return s.load.WaitCaughtUp(ctx)
}

// Stop stops consuming, flushes queued hints until ctx is done, and
// closes the connection and the embedded server. It cancels the parts'
// group and waits for every part (run.go: in shutdown order, each drain
// bounded by ctx). Safe to call twice.
func (s *Service) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		s.grace.stop() // the index is saved with departed workers' blocks; a restart prunes them
		if s.lc != nil {
			_ = s.lc.stop(ctx) // a part's error is Err's
		}
		if s.nc != nil {
			s.nc.Close()
		}
		if s.embedded != nil {
			s.embedded.Shutdown()
			s.embedded.WaitForShutdown()
		}
	})
}

// watchStreams recreates a stream of ours that is deleted while we run,
// as start-up would have: publishers keep somewhere to publish, and the
// consumers reattach to it by themselves (the durable ones from the new
// stream's start). What the old stream held is gone; that is the
// deleter's decision, said once in the log.
func (s *Service) watchStreams() error {
	st := s.cfg.Streams
	ours := map[string]streams.Config{}
	for _, c := range []streams.Config{st.Requests, st.Responses, st.KVEvents, st.Load, st.DeadLetter} {
		if c.Name != "" {
			ours[c.Name] = c
		}
	}
	s.watchCtx, s.watchCancel = context.WithCancel(s.lc.stageContext(stageStreams))
	s.recreating = map[string]bool{}
	sub, err := s.nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.DELETED.*", func(m *nats.Msg) {
		if cfg, ok := ours[m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]]; ok {
			s.recreate(cfg)
		}
	})
	if err != nil {
		s.watchCancel()
		return fmt.Errorf("watch stream deletions: %w", err)
	}
	s.streamsSub = sub
	s.lc.run(stageStreams, "stream watcher", func(ctx context.Context) error { return s.runStreamWatch(ctx, ours) })
	return nil
}

// runStreamWatch looks for missing streams now and then as well: the
// server sends the deletion advisory from the dying stream's own queue
// and may drop it. When ctx ends it stops watching and waits for the
// recreations under way.
func (s *Service) runStreamWatch(ctx context.Context, ours map[string]streams.Config) error {
	defer func() {
		_ = s.streamsSub.Unsubscribe()
		s.watchMu.Lock()
		s.watchStop = true
		s.watchMu.Unlock()
		s.watchCancel()
		s.watchWG.Wait()
	}()
	tick := time.NewTicker(streamCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for name, cfg := range ours {
			octx, cancel := context.WithTimeout(s.watchCtx, streams.DefaultOpTimeout)
			_, err := s.js.Stream(octx, name)
			cancel()
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				s.recreate(cfg)
			}
		}
	}
}

// streamCheckInterval is how often watchStreams looks for a deleted
// stream whose advisory it missed.
const streamCheckInterval = 3 * time.Second

// recreate starts recreating cfg's stream unless that is under way.
func (s *Service) recreate(cfg streams.Config) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watchStop || s.recreating[cfg.Name] {
		return
	}
	s.recreating[cfg.Name] = true
	s.watchWG.Add(1)
	go s.recreateStream(cfg)
}

// recreateStream creates cfg's stream again, retrying until Stop: the
// server announces a deletion before it has finished removing the store,
// and refuses a new stream of that name meanwhile.
func (s *Service) recreateStream(cfg streams.Config) {
	defer s.watchWG.Done()
	defer func() {
		s.watchMu.Lock()
		delete(s.recreating, cfg.Name)
		s.watchMu.Unlock()
	}()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.watchCtx, streams.DefaultOpTimeout)
		_, outcome, err := streams.Ensure(ctx, s.js, cfg, streams.WithLogger(discardLogger))
		cancel()
		if err == nil && outcome != streams.Created {
			// Still there (the advisory can precede the removal), or someone
			// else recreated it; the periodic check catches a late removal.
			return
		}
		if err == nil {
			s.Counters.StreamsRecreated.Inc()
			s.log.Warn("stream was deleted; recreated it empty, consumers resume on it", "stream", cfg.Name)
			return
		}
		if attempt == 20 { // about 10 s: say so once, keep trying
			s.log.Error("stream was deleted and cannot be recreated yet; consumers wait for it",
				"stream", cfg.Name, "err", err)
		}
		select {
		case <-s.watchCtx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

var discardLogger = slog.New(slog.DiscardHandler)

// onWorkerChange keeps the index, loads and senders in step with the
// registry: a departed worker's blocks must not attract hints, and its
// sockets must not linger.
func (s *Service) onWorkerChange(ch registry.Change) {
	s.trackEndpoints(ch)
	defer s.dropForeign(ch) // last: after whatever else put the worker's blocks in the index
	switch ch.Kind {
	case registry.Deleted:
		s.workerLeft(ch.WorkerID) // its blocks go after Config.WorkerGrace (grace.go)
		s.Loads.RemoveWorker(ch.WorkerID)
		s.closeEndpoints(ch.Previous, nil)
		s.log.Info("worker left", "worker_id", ch.WorkerID)
	case registry.Updated:
		s.promote(ch.WorkerID, ch.Record) // its dp ranks may have changed
		if ch.Previous != nil && ch.Previous.HintCurvePublicKey != ch.Record.HintCurvePublicKey {
			s.closeEndpoints(ch.Previous, nil) // reconnect with the new server key
		} else {
			s.closeEndpoints(ch.Previous, ch.Record)
		}
		s.log.Info("worker changed", "worker_id", ch.WorkerID, "endpoints", ch.Record.HintEndpoints)
	case registry.Added:
		if s.grace.back(ch.WorkerID) {
			s.log.Info("worker registered again within its grace period; index kept", "worker_id", ch.WorkerID)
		}
		s.promote(ch.WorkerID, ch.Record)
		s.log.Info("worker joined", "worker_id", ch.WorkerID, "model", ch.Record.Model,
			"block_size", ch.Record.KvBlockSize, "endpoints", ch.Record.HintEndpoints)
	}
}

// curveServerKey finds the CURVE server key of an endpoint: the pin
// endpoint's from the configuration, a worker's from its registry record.
// Endpoints without one stay plain text.
func (s *Service) curveServerKey(endpoint string) (string, bool) {
	if endpoint == s.cfg.PinEndpoint {
		return s.cfg.PinCurvePublicKey, s.cfg.PinCurvePublicKey != ""
	}
	if s.registry == nil {
		return "", false
	}
	for _, w := range s.registry.Workers() {
		if w.HintCurvePublicKey != "" && slices.Contains(w.HintEndpoints, endpoint) {
			return w.HintCurvePublicKey, true
		}
	}
	return "", false
}

func (s *Service) closeEndpoints(prev, next *schemas.WorkerRecord) {
	if prev == nil || s.pool == nil {
		return
	}
	keep := map[string]bool{}
	if next != nil {
		for _, ep := range next.HintEndpoints {
			keep[ep] = true
		}
	}
	for _, ep := range prev.HintEndpoints {
		if !keep[ep] {
			s.releaseEndpoint(ep)
		}
	}
}
