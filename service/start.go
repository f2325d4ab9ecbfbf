package service

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// starting is what one step of Start hands to the next.
type starting struct {
	url      string
	startSeq uint64 // the KV-event stream sequence the loaded snapshot covers
	sender   actions.Sender
	pins     *pins.Deps // nil: pins off
	pinning  *pins.Pinning
	dlq      *consumers.DeadLetter
}

// Start connects, makes sure the streams exist, loads the registry and
// starts the consumers, one step after the other; each step's parts run
// under the lifecycle (run.go). On error, everything already started is
// stopped.
func (s *Service) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			err = s.explainPermission(err)
			s.Stop(context.Background())
		}
	}()
	s.lc = newLifecycle()
	var st starting
	for _, step := range []func(context.Context, *starting) error{
		s.checkConfig,    // validated once, before anything is connected
		s.connect,        // the embedded server when no URL, then NATS and JetStream
		s.ensureStreams,  // and the watcher that recreates them
		s.bridgeZMQ,      // with --dynamo-zmq: Dynamo's ZMQ event plane onto them
		s.openIndex,      // the snapshot, the holding area, snapshot reclaim
		s.startSenders,   // the ZeroMQ pool
		s.startHTTP,      // /metrics, /healthz, /readyz, /v1/
		s.startRegistry,  // loaded before any decision
		s.startEngine,    // pins, affinity, the decisions
		s.startState,     // KV events and load, applied up to now
		s.startTriggers,  // agents, requests, responses, renewals
		s.startSnapshots, // saving the index
	} {
		if err := step(ctx, &st); err != nil {
			return err
		}
	}
	// Said once everything that can refuse to start has passed, so a
	// start that fails says only why.
	s.reportTargets() // targets.go
	s.ready.Store(true)
	ss := s.cfg.Streams
	s.log.Info("hintstream running", "nats", st.url, "index_blocks", s.Index.Stats().DeviceBlocks, "requests", ss.Requests.Subjects,
		"kv_events", ss.KVEvents.Subjects, "load", ss.Load.Subjects, "registry", s.cfg.RegistryBucket)
	return nil
}

func (s *Service) checkConfig(context.Context, *starting) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if err := s.ensureFileLimit(); err != nil {
		return err
	}
	s.served = registry.ServedModels(s.cfg.Models)
	return nil
}

func (s *Service) connect(ctx context.Context, st *starting) (err error) {
	st.url = s.cfg.NATSURL
	if st.url == "" {
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
		st.url = s.embedded.ClientURL()
		s.log.Info("embedded JetStream server started", "url", st.url, "store", s.cfg.EmbeddedDir)
	}
	ncfg := s.cfg.NATS
	ncfg.URL = st.url
	if ncfg.Logger == nil {
		ncfg.Logger = s.log
	}
	if s.nc, err = natsconn.Dial(ctx, ncfg); err != nil { // retries until ncfg.ConnectTimeout
		return err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return err
	}
	// Lookups ride out a cluster not ready to answer; buckets and the
	// object store get the cluster's replicas.
	s.js = placed(streams.Patient(s.js, streams.WithLogger(s.log)), s.cfg.Placement)
	return nil
}

func (s *Service) ensureStreams(ctx context.Context, _ *starting) error {
	fctx, done := s.failFast(ctx)
	_, err := streams.EnsureSet(fctx, s.js, s.cfg.Streams,
		streams.WithUpdate(s.cfg.UpdateStreams), streams.WithLogger(s.log))
	done()
	if err != nil {
		if perm := s.explainPermission(err); errors.Is(perm, ErrPermissionDenied) {
			return perm // asking the account whether JetStream is on would only be refused again
		}
		return natsconn.ExplainJetStream(ctx, s.nc, s.js, err)
	}
	ss := s.cfg.Streams
	w := streams.NewWatcher(s.nc, s.js, []streams.Config{ss.Requests, ss.Responses, ss.KVEvents, ss.Load, ss.DeadLetter},
		s.log, func(string) { s.Counters.StreamsRecreated.Inc() })
	s.lc.run(stageStreams, "stream watcher", w.Run)
	return nil
}

// openIndex runs before anything holds the index: a snapshot that fails
// to load leaves a fresh one in its place.
func (s *Service) openIndex(ctx context.Context, st *starting) error {
	s.snaps = snapshots.New(s.js, s.cfg.SnapshotBucket, s.cfg.Streams.KVEvents.Name, s.snapshotSuffix(), s.log)
	st.startSeq = s.loadSnapshot(ctx)
	s.startHolding()
	s.startReclaim()
	return nil
}

func (s *Service) startSenders(_ context.Context, st *starting) (err error) {
	s.latency = &observe.Histogram{}
	popts := []zmqsend.PoolOption{zmqsend.WithQueueSize(s.cfg.SenderQueue), zmqsend.WithLogger(s.log),
		zmqsend.WithMaxHeld(max(s.cfg.SenderMaxHeld, 0)), zmqsend.WithSettleDelay(max(s.cfg.SenderSettleDelay, 0)),
		zmqsend.WithCurve(s.curveServerKey), zmqsend.WithSentHook(s.latency.Observe)}
	if s.cfg.CurveClientPublicKey != "" {
		popts = append(popts, zmqsend.WithCurveClientKeys(s.cfg.CurveClientPublicKey, s.cfg.CurveClientSecretKey))
	}
	if s.pool, err = zmqsend.NewPool(append(popts, s.budgetOptions()...)...); err != nil {
		return err
	}
	s.lc.run(stageSenders, "hint senders", s.runSenders)
	if err := s.pool.Err(); err != nil {
		return err
	}
	st.sender = s.pool
	if s.cfg.HintsLog != nil {
		st.sender = actions.NewRecorder(s.cfg.HintsLog, s.pool)
	}
	return nil
}

func (s *Service) startHTTP(context.Context, *starting) (err error) {
	if s.cfg.HTTPAddr == "" {
		return nil
	}
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
			Outcomes: s.outcomesView})
	if err != nil {
		return err
	}
	s.lc.run(stageHTTP, "http server", s.runHTTP)
	s.log.Info("serving /metrics, /healthz, /readyz", "addr", s.http.Addr(), "pprof", s.cfg.Pprof)
	return nil
}

func (s *Service) startRegistry(ctx context.Context, _ *starting) (err error) {
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
	return nil
}

func (s *Service) startEngine(ctx context.Context, st *starting) (err error) {
	if st.pins, err = s.pinStores(ctx); err != nil {
		return err
	}
	aff, err := s.startAffinity(ctx)
	if err != nil {
		return err
	}
	var observers []engine.Observer
	if s.agents, err = s.agentTracker(); err != nil { // agents.go
		return err
	}
	if s.agents != nil {
		observers = append(observers, s.agents.Observer())
	}
	s.engine, err = engine.NewEngine(s.cfg.Decisions, engine.EngineDeps{Index: s.Index, Holding: s.holding, Loads: s.Loads,
		Workers: modelWorkers{s}, Sender: st.sender, Pins: st.pins, Affinity: aff,
		Counters: s.Counters, Log: s.log, Observers: observers})
	if err != nil {
		return err
	}
	s.applier = index.NewApplier(s.holding, index.ApplierConfig{KeepWorker: s.keepWorkerFunc(), Counters: s.Counters})
	s.Selector = s.engine.Selector()
	if st.pinning = s.engine.Pins(); st.pinning != nil {
		s.Learner = st.pinning.Learner
	}
	return nil
}

// startState makes every consumer, then starts the state ones and waits
// until they have applied their streams up to now: hints chosen from a
// half-built index would go to the wrong worker, so requests are taken
// only after that (startTriggers).
func (s *Service) startState(ctx context.Context, st *starting) error {
	st.dlq = consumers.NewDeadLetter(s.js, s.cfg.DeadLetterPrefix)
	ss := s.cfg.Streams
	applyKV := consumers.ApplyKV(s.applier, s.cfg.Decisions.Limits)
	s.kv = consumers.NewStateConsumer(s.js, consumers.StateConfig{Kind: "kv_events", Stream: ss.KVEvents.Name,
		Filter: ss.KVEvents.Subjects, Shards: s.cfg.KVApplyShards, StartSeq: st.startSeq},
		applyKV, st.dlq, s.Counters, s.log)
	s.load = consumers.NewStateConsumer(s.js, consumers.StateConfig{Kind: "load", Stream: ss.Load.Name,
		Filter: ss.Load.Subjects}, consumers.ApplyMessages(s.engine.Load), st.dlq, s.Counters, s.log)
	if err := s.startAgents(ctx); err != nil {
		return err
	}
	s.requests = consumers.NewRequestConsumer(s.js, consumers.RequestConfig{
		Stream: ss.Requests.Name, Durable: s.cfg.RequestsDurable, Filter: s.consumerFilter(ss.Requests.Subjects, streams.RequestPrefix),
		DeliverNew: !s.cfg.RequestsDeliverAll, AckWait: s.cfg.AckWait, MaxAckPending: s.cfg.MaxAckPending,
	}, s.engine.Request, st.dlq, s.Counters, s.log)
	if st.pinning != nil || s.agents != nil {
		s.responses = consumers.NewResponseConsumer(s.js, consumers.ResponseConfig{
			Stream: ss.Responses.Name, Durable: s.cfg.ResponsesDurable, Filter: s.consumerFilter(ss.Responses.Subjects, streams.ResponsePrefix),
			DeliverNew: !s.cfg.RequestsDeliverAll, AckWait: s.cfg.AckWait, MaxAckPending: s.cfg.MaxAckPending,
		}, s.engine.Response, st.dlq, s.Counters, s.log)
	}
	for _, c := range []*consumers.StateConsumer{s.kv, s.load} {
		if err := c.Start(ctx); err != nil {
			c.Stop() // what a half start left (its shards)
			return err
		}
		s.lc.run(stageState, "state consumer", c.Run)
	}
	if err := s.startExtraKV(ctx, applyKV, st.dlq); err != nil {
		return err
	}
	if err := s.WaitCaughtUp(ctx); err != nil {
		return fmt.Errorf("catching up on KV events and load: %w", err)
	}
	return nil
}

func (s *Service) startTriggers(ctx context.Context, st *starting) error {
	if err := s.startAgentEvents(ctx, st.dlq); err != nil {
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
		s.startRenewals(st.pinning)
	}
	return s.startRequestTrace(ctx, st.dlq) // requesttrace.go
}

func (s *Service) startSnapshots(context.Context, *starting) error {
	if s.cfg.SnapshotInterval > 0 {
		s.lc.run(stageSnapshots, "snapshotter", s.runSnapshots)
	}
	return nil
}
