package service

import (
	"context"
	"errors"
	"github.com/hintstream/hintstream/decide/agents"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/emit/lmcachepin"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Service is one running hintstream instance.
type Service struct {
	cfg Config
	log *slog.Logger

	Counters *metrics.Families
	Index    *index.Memory
	Loads    *routing.LoadTable
	Selector *routing.Selector

	embedded *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	registry *registry.Registry
	pool     *zmqsend.Pool
	kv       *consumers.StateConsumer
	holding  *index.Holding // gate of the index: registered workers first
	applier  *index.Applier // KV events to the holding area
	grace    workerGrace    // grace.go
	engine   *engine.Engine // the decisions, shared with replay
	load     *consumers.StateConsumer
	requests *consumers.RequestConsumer
	affinity *client.AffinityWriter // nil when off
	// responses is nil when pins are off.
	responses *consumers.ResponseConsumer
	// Learner holds the learned tool times (nil when pins are off).
	Learner *tooltime.Learner
	// agents follows agent programs (nil when Config.Agents is off).
	agents *agents.Tracker

	snaps        *snapshots.Store // the index's snapshots (after Start)
	lastSnapshot atomic.Uint64    // KV stream sequence the last saved snapshot covers
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

	http    *observe.Server
	latency *observe.Histogram
	ready   atomic.Bool

	// fileLimit is the RLIMIT_NOFILE in effect (bounds.go).
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
func (s *Service) Pool() *zmqsend.Pool { return s.pool }

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
	if len(s.cfg.pinTargets()) == 0 { // targets.go: said at start
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
	deps := &pins.Deps{Endpoint: s.cfg.PinEndpoint, Index: idx, Slots: slots, Workers: s.registry}
	if s.cfg.LMCache.URL != "" {
		store, err := lmcachepin.OpenKVStore(ctx, s.js, "")
		if err != nil {
			return nil, err
		}
		h, err := lmcachepin.New(s.cfg.LMCache, store, lmcachepin.WithLogger(s.log), lmcachepin.WithCounters(&s.Counters.LMCachePins))
		if err != nil {
			return nil, err
		}
		s.lc.run(stageRenewals, "LMCache pins", h.Run)
		deps.Tokens = h
	}
	return deps, nil
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

// onWorkerChange keeps the index, loads and senders in step with the
// registry: a departed worker's blocks must not attract hints, and its
// sockets must not linger.
func (s *Service) onWorkerChange(ch registry.Change) {
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
