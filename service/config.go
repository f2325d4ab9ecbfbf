// Package service assembles a running hintstream: NATS connection (or an
// embedded server), streams, registry, index, load table, consumers and
// hint senders, with one Start and one Stop.
package service

import (
	"github.com/hintstream/hintstream/decide/agents"
	"io"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/emit/lmcachepin"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/hintstream/hintstream/streams"
)

// Config is everything `hintstream run` can set. The zero value of a
// field means its documented default (see Defaults).
type Config struct {
	// NATSURL of the bus; empty starts an embedded JetStream server.
	NATSURL string
	// NATS holds the connection's security and naming (TLS, creds, nkey,
	// user/password, token); its URL is NATSURL's.
	NATS natsconn.Config
	// PinCurvePublicKey is the Mooncake master's CURVE server key (Z85);
	// empty: the pin socket is plain text. Workers publish theirs in their
	// registry record (hint_curve_public_key).
	PinCurvePublicKey string
	// CurveClientPublicKey/SecretKey fix hintstream's own CURVE keypair
	// (for servers that authorise clients by key); empty: one is made at
	// start-up.
	CurveClientPublicKey, CurveClientSecretKey string
	// EmbeddedDir holds the embedded server's store; default
	// DefaultEmbeddedDir.
	EmbeddedDir string
	// EmbeddedPort for the embedded server; 0 picks a free port (the URL
	// is logged and returned by ClientURL).
	EmbeddedPort int

	Streams streams.Set
	// UpdateStreams lets start-up add missing subjects to existing
	// streams; without it a mismatch is an error.
	UpdateStreams bool
	// Agents, when set, turns agent-aware hints on (package agents):
	// harness tool events from AgentEventsStream (default AGENT_EVENTS),
	// outcomes at /v1/outcomes. See docs/agents.md.
	Agents            *agents.Config
	AgentEventsStream string
	// RequestTrace, when set (run --source dynamo), consumes Dynamo's
	// request-trace records (requesttrace.go).
	RequestTrace *RequestTraceConfig

	RegistryBucket  string // default "hintstream_workers"
	RequestsDurable string // default consumers.DefaultRequestsDurable
	// RequestsDeliverAll makes a newly created requests consumer start at
	// the beginning of the stream instead of its end.
	RequestsDeliverAll bool
	// AckWait is how long a group member may hold a request or response
	// before JetStream gives it to another; default
	// consumers.DefaultAckWait (30s).
	AckWait time.Duration
	// MaxAckPending bounds the messages one member holds unacked; default
	// consumers.DefaultMaxAckPending (1024).
	MaxAckPending    int
	DeadLetterPrefix string // default consumers.DefaultDeadLetterPrefix
	SenderQueue      int    // per endpoint; default zmqsend.DefaultQueueSize
	// SenderMaxHeld bounds the triggers one endpoint's waiting hints keep
	// unacked (zmqsend.WithMaxHeld); default zmqsend.DefaultMaxHeld,
	// NoBound: no bound.
	SenderMaxHeld int
	// SenderSettleDelay is how long after ZMQ took a hint its trigger is
	// acked (zmqsend.WithSettleDelay); default
	// zmqsend.DefaultSettleDelay, Immediately: at once.
	SenderSettleDelay time.Duration

	// KVApplyShards applies KV events of different subjects (workers) in
	// parallel, each subject in order; default DefaultKVApplyShards.
	KVApplyShards int

	// PinEndpoint is the Mooncake master's PULL socket for tool-call pins
	// (DYN_KVM_PIN_ENDPOINT); empty: no Mooncake pins.
	PinEndpoint string
	// LMCache, when its URL is set, also keeps tool-call pins in LMCache
	// through its controller (package lmcachepin).
	LMCache lmcachepin.Config
	// Pins: PinsAuto (""), PinsOn or PinsOff (targets.go).
	Pins             string
	ResponsesDurable string // default consumers.DefaultResponsesDurable
	// WorkerGrace is how long a worker whose record was deleted or
	// expired keeps its indexed blocks (default DefaultWorkerGrace; Off:
	// dropped at once).
	WorkerGrace time.Duration
	// RequestIndexTTL is how long a response may trail its request and
	// still be pinned; default DefaultRequestIndexTTL.
	RequestIndexTTL time.Duration

	// SnapshotInterval saves the index to the object store this often, and
	// at shutdown; start-up loads the latest snapshot and replays only the
	// KV events after it. Default DefaultSnapshotInterval; Off: no
	// snapshots.
	SnapshotInterval time.Duration
	SnapshotBucket   string // default "hintstream_snapshots"

	// HintsLog, when set, receives every hint handed to a sender as an
	// actions.HintRecord JSON line (to compare with a replay's dry run).
	HintsLog io.Writer

	// HTTPAddr serves /metrics (Prometheus), /healthz and /readyz; empty:
	// no HTTP server. Pprof adds /debug/pprof there.
	HTTPAddr string
	Pprof    bool

	Logger *slog.Logger

	// Prefetch affinity. AffinityBucket is the JetStream KV
	// bucket where each queued prefetch's worker is recorded under its
	// session (schemas.AffinityRecord), for frontends to pass to the
	// router (client.Affinity.PreferredWorker); default
	// "hintstream_affinity", created when absent. NoAffinity turns the
	// records off.
	AffinityBucket string
	NoAffinity     bool

	// Registered workers first, renewals, snapshot reclaim.
	// SnapshotReclaimGrace is how long the chunks of a snapshot save no
	// object names must have been idle before they are purged (after each
	// save and at start-up); default DefaultSnapshotReclaimGrace.
	SnapshotReclaimGrace time.Duration
	// PinRenewRate is the pin renewal budget, renewals/s (their own
	// goroutine); default pins.DefaultPinRenewRate.
	PinRenewRate float64
	// PinSlotsMaxBytes and RequestIndexMaxBytes cap the hintstream_pins
	// and hintstream_requests buckets when they are created (or updated,
	// with UpdateStreams); default DefaultPinSlotsMaxBytes and
	// DefaultRequestIndexMaxBytes, NoBound: no cap.
	PinSlotsMaxBytes, RequestIndexMaxBytes int64
	// PinSlotLinger and PinSlotMarkerTTL: pins.WithSlotLinger and
	// pins.WithSlotMarkerTTL; 0: their defaults.
	PinSlotLinger, PinSlotMarkerTTL time.Duration

	// Cardinality bounds (service/bounds.go).
	//
	// MaxEndpoints is the socket budget: open hint senders, the pin
	// endpoint's aside (zmqsend.WithMaxEndpoints); default
	// zmqsend.DefaultMaxEndpoints. Start raises RLIMIT_NOFILE to
	// zmqsend.FilesFor it or fails.
	MaxEndpoints int
	// SenderIdleClose closes a sender with nothing to send for this long;
	// default zmqsend.DefaultIdleClose, Off: never.
	SenderIdleClose time.Duration
	// EndpointRules say which hint endpoints a worker record may list
	// (ipc://, at most MaxDPRanks); the zero value is tcp:// only and
	// schemas.DefaultMaxDPRanks.
	EndpointRules schemas.EndpointRules
	// MetricsTopTools bounds the tool label values on /metrics; default
	// observe.DefaultTopTools.
	MetricsTopTools int

	// Cluster, retention and model sharding (see cluster.go).
	//
	// Placement is the replicas and placement tags of the KV buckets
	// (registry, request index, pins) and the snapshot object store, when
	// hintstream creates them; the streams carry their own in Streams.
	// Zero: one replica, anywhere.
	Placement streams.Placement
	// KVEventsKeep: after a snapshot is saved, the KV events every
	// snapshot of the stream covers and older than this are purged, but
	// only from a KV-event stream hintstream created (see
	// streams.CreatedByHintstream). Default DefaultKVEventsKeep; Off:
	// never purge.
	KVEventsKeep time.Duration
	// Models restricts this member to these models: it consumes only their
	// requests and responses, indexes only their workers' KV events, and
	// chooses only among their workers. Empty: every model.
	Models []string
	// KVStreams are extra KV-event streams read beside Streams.KVEvents
	// (attached, never created or purged; kvstreams.go).
	KVStreams []string
	// DynamoZMQ, when set, runs a bridge of Dynamo's ZMQ event plane in
	// the service (bridge.EventPlaneBridge; eventplane_zmq.go): these
	// publishers' (or, with DynamoZMQBroker, a broker's XPUB) KV events,
	// load and ActiveSequenceEvents go to the streams DynamoScope's
	// subjects are captured by, as `hintstream bridge --dynamo-zmq` does.
	DynamoZMQ       []string
	DynamoZMQBroker bool
	// DynamoScope is the Dynamo namespace and component of the event
	// plane (--dynamo-namespace, --dynamo-component); zero when not given.
	DynamoScope eventplane.Scope

	// Decisions: the worker choice, index options, prefetch and
	// pin TTLs, tool times, keep-pin, renewals, input limits and the
	// holding area, the one configuration `run` and `replay` share
	// (engine.Decisions; their fields are promoted: cfg.PrefetchTTL).
	engine.Decisions

	// flags is what RegisterFlags bound and ApplyFlags completes the
	// Config from (flags.go).
	flags *configFlags
}

// Defaults fills zero fields with their defaults.
func (c Config) Defaults() Config {
	if c.EmbeddedDir == "" {
		c.EmbeddedDir = DefaultEmbeddedDir
	}
	if c.Streams.Requests.Name == "" {
		c.Streams = streams.DefaultSet()
	}
	if c.RegistryBucket == "" {
		c.RegistryBucket = registry.DefaultBucket
	}
	if c.WorkerGrace == 0 {
		c.WorkerGrace = DefaultWorkerGrace
	}
	if c.RequestsDurable == "" {
		c.RequestsDurable = consumers.DefaultRequestsDurable
	}
	if c.AffinityBucket == "" {
		c.AffinityBucket = schemas.DefaultAffinityBucket
	}
	if c.DeadLetterPrefix == "" {
		c.DeadLetterPrefix = consumers.DefaultDeadLetterPrefix
	}
	if c.SenderSettleDelay == 0 {
		c.SenderSettleDelay = zmqsend.DefaultSettleDelay
	}
	if c.SenderMaxHeld == 0 {
		c.SenderMaxHeld = zmqsend.DefaultMaxHeld
	}
	if c.SenderQueue <= 0 {
		c.SenderQueue = zmqsend.DefaultQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.KVApplyShards <= 0 {
		c.KVApplyShards = DefaultKVApplyShards
	}
	if c.ResponsesDurable == "" {
		c.ResponsesDurable = consumers.DefaultResponsesDurable
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.SnapshotBucket == "" {
		c.SnapshotBucket = snapshots.DefaultSnapshotBucket
	}
	if c.RequestIndexTTL <= 0 {
		c.RequestIndexTTL = DefaultRequestIndexTTL
	}
	c.Decisions = c.Decisions.WithDefaults()
	return c.clusterDefaults()
}
