package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/ahead"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
)

// DefaultRetryDelay is how long a tool-call response whose request is not
// yet indexed waits before it is tried again (EngineDeps.RetryDelay).
const DefaultRetryDelay = 500 * time.Millisecond

// ErrEngineDeps means NewEngine was given too little to decide with.
var ErrEngineDeps = errors.New("engine: engine dependencies incomplete")

// Message is an event as a transport hands it over: subject, headers and
// bytes. Decoding is the engine's (kvevents.Decoder.Decode, DecodeLoad,
// DecodeRequest, DecodeResponse), not the transport's, because what an event decodes to
// depends on its subject and headers as much as on its bytes (the worker
// id of an engine batch, the bridge's epoch and sequence, hint headers
// sent as NATS headers), and a replay must read them exactly as the live
// consumers do: one decoder, beside the decisions, serves both.
type Message struct {
	Subject string
	Header  nats.Header
	Data    []byte
}

// AffinityRecorder is told each wake-up's choice: the session's next
// request should go where its prefetch went, until the prefetch expires.
// It must not block (client.AffinityWriter queues to a KV bucket).
type AffinityRecorder interface {
	RecordAffinity(session string, rec schemas.AffinityRecord)
}

// EngineDeps are what an Engine decides with, apart from its Decisions.
type EngineDeps struct {
	// Index is the block index the worker choice reads (required).
	Index *index.Memory
	// KV is what KV events are applied to: an *index.Holding in front of Index
	// (registered workers first); nil: Index itself.
	KV index.Index
	// Loads is the workers' load, fed by ApplyLoad; nil: a new table.
	Loads *routing.LoadTable
	// Workers are those a request may be routed to (the registry, or a
	// view of it limited to the served models).
	Workers routing.Workers
	// Sender takes the hints (a *zmqsend.Pool, or an actions.Recorder in
	// front of one, or alone in a dry run).
	Sender actions.Sender
	// Pins, when set, turns tool-call pins on: the request and slot
	// stores, the registry and the pin endpoint. Its zero Sender,
	// Counters, Log and Now are the engine's.
	Pins *pins.Deps
	// Affinity, when set, is told each queued prefetch's worker.
	Affinity AffinityRecorder
	// Observer, when set, is told of every turn and response (observer.go).
	Observer RequestObserver
	// Ahead, when set, sends header-free prefetches (ahead.go).
	Ahead *ahead.Scheduler
	// KeepWorker, when set, limits the KV events applied to those of the
	// workers it accepts (--models; see models.go).
	KeepWorker func(workerID uint64) bool
	// RetryDelay: see DefaultRetryDelay.
	RetryDelay time.Duration
	// Counters and Log: nil gives private counters and slog.Default().
	Counters *metrics.Families
	Log      *slog.Logger
	// Clock is "now" for expiry, burst spreading and renewals; nil:
	// time.Now. A replay gives the time of the event in hand.
	Clock func() time.Time
}

// Engine makes hintstream's decisions on decoded events, apart from how
// they arrive: it updates the index and the load table, and derives
// prefetches, pins, releases and renewals, each trigger event ending in
// an Outcome for its transport to settle. Package consumers drives it
// from JetStream in `hintstream run`, package replay from stream history;
// both build it with NewEngine. Safe for concurrent use as the consumers
// call it (events of one worker from one goroutine at a time).
type Engine struct {
	d          Decisions
	kv         index.Index
	loads      *routing.LoadTable
	selector   *routing.Selector
	sender     actions.Sender
	pins       *pins.Pinning
	affinity   AffinityRecorder
	observer   RequestObserver
	ahead      *ahead.Scheduler
	keep       func(uint64) bool
	retryDelay time.Duration
	counters   *metrics.Families
	log        *slog.Logger
	now        func() time.Time

	epochs  sync.Map                               // kvevents.WorkerKey -> string (ApplyKV)
	applied map[schemas.EventKind]*metrics.Counter // looked up once: one is bumped per event
	// planeSeq numbers event-plane frames for the index's gap check.
	planeSeq *kvevents.Sequencer

	kvDecoders sync.Pool    // *kvevents.Decoder (apply.go)
	bodies     *bodyPool    // prefetch envelopes (bodies.go)
	requests   *requestPool // decoded requests (bodies.go)

	prefetchObs PrefetchObserver // outcomes of wake-up prefetches (observe.go); nil: none
}

// NewEngine is the one constructor of run's and replay's decisions: d
// (after its defaults, validated) configures the worker choice, the
// prefetch TTL, the pins and their renewals; deps are what they work on.
// Its errors wrap ErrEngineDeps or the Decisions' own (see Validate).
func NewEngine(d Decisions, deps EngineDeps) (*Engine, error) {
	d = d.WithDefaults()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if deps.Index == nil {
		return nil, fmt.Errorf("%w: no index", ErrEngineDeps)
	}
	e := &Engine{d: d, kv: deps.KV, loads: deps.Loads, sender: deps.Sender, affinity: deps.Affinity,
		keep: deps.KeepWorker, retryDelay: deps.RetryDelay, counters: deps.Counters, log: deps.Log, now: deps.Clock,
		bodies: newBodyPool(), requests: newRequestPool(), observer: deps.Observer, ahead: deps.Ahead}
	if e.kv == nil {
		e.kv = deps.Index
	}
	if e.loads == nil {
		e.loads = routing.NewLoadTable()
	}
	if e.retryDelay <= 0 {
		e.retryDelay = DefaultRetryDelay
	}
	if e.counters == nil {
		e.counters = metrics.New()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	opts := []routing.Option{routing.WithConfig(*d.Routing)}
	if deps.Clock != nil {
		// Burst spreading decays on the events' clock in a replay, as live on its.
		opts = append(opts, routing.WithClock(deps.Clock))
	}
	var err error
	if e.selector, err = routing.NewSelector(deps.Workers, deps.Index, e.loads, opts...); err != nil {
		return nil, err
	}
	if deps.Pins != nil {
		pd := *deps.Pins
		if pd.Sender == nil {
			pd.Sender = deps.Sender
		}
		if pd.Counters == nil {
			pd.Counters = e.counters
		}
		if pd.Log == nil {
			pd.Log = e.log
		}
		if pd.Now == nil {
			pd.Now = deps.Clock
		}
		e.pins = pins.New(d.PinConfig(), pd)
	}
	// Looked up once: one is bumped per event.
	e.applied = map[schemas.EventKind]*metrics.Counter{}
	for _, k := range []schemas.EventKind{schemas.KindStored, schemas.KindRemoved, schemas.KindCleared} {
		e.applied[k] = e.counters.KVEventsApplied.With(k.String())
	}
	e.planeSeq = kvevents.NewSequencer(0) // Dynamo's event plane
	return e, nil
}

// Selector is the worker choice (for /debug/route).
func (e *Engine) Selector() *routing.Selector { return e.selector }

// Pins are the tool-call pins, nil when off: the service ticks their
// renewal clock and runs their renewals (pins.Pinning.RunRenewals).
func (e *Engine) Pins() *pins.Pinning { return e.pins }
