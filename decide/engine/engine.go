package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
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
// bytes. Decoding a trigger or a load report is the engine's (DecodeLoad,
// DecodeRequest, DecodeResponse), not the transport's, because what an
// event decodes to depends on its subject and headers as much as on its
// bytes (hint headers sent as NATS headers), and a replay must read them
// exactly as the live consumers do: one decoder, beside the decisions,
// serves both. KV events are not the engine's: the transport decodes
// them (kvevents.Decoder) for index.Applier.
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
	// Holding, when set, is the holding area in front of Index, which
	// knows the registered workers: only their dp ranks' load reports
	// are kept (ApplyLoad). KV events are applied apart from the engine
	// (index.Applier).
	Holding *index.Holding
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
	// Observers are told of every request and response decided on,
	// after the decisions (observer.go).
	Observers []Observer
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
// they arrive: it updates the load table, and derives
// prefetches, pins, releases and renewals, each trigger event ending in
// an Outcome for its transport to settle. Package consumers drives it
// from JetStream in `hintstream run`, package replay from stream history;
// both build it with NewEngine. Safe for concurrent use as the consumers
// call it (events of one worker from one goroutine at a time).
type Engine struct {
	d          Decisions
	index      *index.Memory
	workers    routing.Workers
	holding    *index.Holding
	loads      *routing.LoadTable
	selector   *routing.Selector
	sender     actions.Sender
	pins       *pins.Pinning
	affinity   AffinityRecorder
	observers  []Observer
	retryDelay time.Duration
	counters   *metrics.Families
	log        *slog.Logger
	now        func() time.Time

	bodies   *bodyPool    // prefetch envelopes (bodies.go)
	requests *requestPool // decoded requests (bodies.go)
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
	e := &Engine{d: d, index: deps.Index, workers: deps.Workers, holding: deps.Holding, loads: deps.Loads, sender: deps.Sender, affinity: deps.Affinity,
		retryDelay: deps.RetryDelay, counters: deps.Counters, log: deps.Log, now: deps.Clock,
		bodies: newBodyPool(), requests: newRequestPool(), observers: deps.Observers}
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
		if pd.Pages == nil {
			pd.Pages = deps.Index
		}
		e.pins = pins.New(d.PinConfig(), pd)
		var po pinObservers
		for _, o := range deps.Observers {
			if p, ok := o.(pins.Observer); ok {
				po = append(po, p)
			}
		}
		if len(po) > 0 {
			e.pins.Observer = po
		}
	}
	return e, nil
}

// Selector is the worker choice (for /debug/route).
func (e *Engine) Selector() *routing.Selector { return e.selector }

// Pins are the tool-call pins, nil when off: the service ticks their
// renewal clock and runs their renewals (pins.Pinning.RunRenewals).
func (e *Engine) Pins() *pins.Pinning { return e.pins }
