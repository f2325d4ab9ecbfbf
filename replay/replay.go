// Package replay runs hintstream's decisions over stream history: the KV
// events, load, requests and responses merged in their original time
// order, so that each choice is made against the state a live instance
// had at that moment. A dry run writes the hints instead of sending them.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configure a replay.
type Options struct {
	Streams streams.Set
	// Since starts the requests and responses at this time; FromSeq (when
	// non-zero) at this requests-stream sequence instead. KV events and load
	// are always read from their start: the index at Since needs them all.
	Since   time.Time
	FromSeq uint64
	// Until stops the replay after events of this time (zero: the end).
	Until time.Time

	// DryRun writes every hint to Out as a JSON line instead of sending it.
	DryRun bool
	Out    io.Writer
	// Sender sends the hints when not DryRun.
	Sender actions.Sender
	// Progress, when set, receives a progress line now and then (a
	// terminal's stderr).
	Progress io.Writer

	RegistryBucket string
	PinEndpoint    string // empty: no pins
	Logger         *slog.Logger
	// Models replays a member that serves only these models (`run
	// --models`): only their requests and responses, only their workers'
	// KV events, only their workers chosen (registry.Served, as run).
	// Empty: every model.
	Models []string

	// Decisions are the live run's: the same struct, the same flags
	// (engine.Decisions.RegisterFlags, decide/engine/flags.go), the same defaults. Pins are
	// renewed on the events' clock, as run does on its.
	engine.Decisions
}

// Summary counts what a replay saw and did.
type Summary struct {
	Events map[string]uint64 // by kind: kv_events, load, requests, responses
	Hints  map[string]uint64 // queued (or written) by kind: prefetch, pin, release, renew
	Errors map[string]uint64 // malformed and skipped, by reason
}

// Run replays the history and returns its summary.
func Run(ctx context.Context, js jetstream.JetStream, o Options) (Summary, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DryRun && o.Out == nil {
		return Summary{}, errors.New("replay: a dry run needs an output")
	}
	reg, err := registry.Open(ctx, js, registry.WithBucket(o.RegistryBucket), registry.WithLogger(o.Logger))
	if err != nil {
		return Summary{}, err
	}
	regCtx, stopReg := context.WithCancel(ctx)
	regDone := make(chan error, 1)
	go func() { regDone <- reg.Run(regCtx) }()
	defer func() {
		stopReg()
		<-regDone
	}()
	select {
	case <-reg.Ready():
	case <-ctx.Done():
		return Summary{}, ctx.Err()
	}
	o.Decisions = o.Decisions.WithDefaults()
	if err := o.Decisions.Validate(); err != nil {
		return Summary{}, err
	}
	counters := metrics.New()
	events := map[string]uint64{} // replayed, by kind
	clock := &eventClock{}
	ix := o.NewIndex(o.Logger)
	served := registry.ServedModels(o.Models)
	// KV events pass the live run's holding area; the registry's current
	// workers are registered in it.
	holding := index.NewHolding(ix, o.Holding, counters)
	for _, w := range reg.Workers() {
		holding.Register(w.WorkerID, len(w.HintEndpoints))
	}
	sender := o.Sender
	if o.DryRun {
		sender = actions.NewRecorder(o.Out, nil)
	}
	var pinDeps *pins.Deps
	if o.PinEndpoint != "" {
		pinDeps = &pins.Deps{Endpoint: o.PinEndpoint, Index: newMemRequests(), Slots: pins.NewMemSlots(), Workers: reg}
	}
	// The live decisions, without their transport: the engine run builds,
	// on the events' clock (expiry, burst spreading, renewals). Nothing is
	// settled: each trigger's Outcome is only counted.
	var keep func(uint64) bool
	if !served.All() {
		keep = func(id uint64) bool { return served.KeepWorker(reg, id) }
	}
	eng, err := engine.NewEngine(o.Decisions, engine.EngineDeps{Index: ix, Holding: holding, Workers: served.View(reg),
		Sender: sender, Pins: pinDeps, Counters: counters, Log: o.Logger, Clock: clock.now})
	if err != nil {
		return Summary{}, err
	}
	// KV events are decoded and applied as the live consumer does.
	applier := index.NewApplier(holding, index.ApplierConfig{KeepWorker: keep, Counters: counters})
	handlers := map[string]func(context.Context, engine.Delivery, jetstream.Msg){
		"kv_events": applied(consumers.ApplyKV(applier, o.Decisions.Limits), counters, "kv_events"),
		"load":      applied(consumers.ApplyMessages(eng.Load), counters, "load"),
		"requests":  decided(eng.Request, counters, "requests"),
	}
	if eng.Pins() != nil {
		handlers["responses"] = decided(eng.Response, counters, "responses")
	}

	var srcs []*source
	for _, s := range []struct {
		kind    string
		cfg     streams.Config
		trigger bool
	}{
		{"kv_events", o.Streams.KVEvents, false}, {"load", o.Streams.Load, false},
		{"requests", servedOnly(o.Streams.Requests, served, streams.RequestPrefix), true},
		{"responses", servedOnly(o.Streams.Responses, served, streams.ResponsePrefix), true},
	} {
		if _, ok := handlers[s.kind]; !ok {
			continue
		}
		src, err := openSource(ctx, js, s.kind, s.cfg, s.trigger, o)
		if err != nil {
			return Summary{}, err
		}
		if src != nil {
			srcs = append(srcs, src)
		}
	}
	last := time.Now()
	var done uint64
	// The bar runs over event time, from the first event to --until (or
	// the start of the replay).
	var first time.Time
	end := o.Until
	if end.IsZero() {
		end = time.Now()
	}
	for {
		next, err := earliest(ctx, srcs)
		if err != nil {
			return Summary{}, err
		}
		if next == nil {
			break
		}
		m := next.pop()
		md, _ := m.Metadata()
		if !o.Until.IsZero() && md != nil && md.Timestamp.After(o.Until) {
			next.done = true
			continue
		}
		d := engine.Delivery{Delivered: 1}
		if md != nil {
			clock.set(md.Timestamp)
			d.Seq, d.Time = md.Sequence.Stream, md.Timestamp
		} else {
			d.Unknown = errNoMetadata
		}
		events[next.kind]++
		handlers[next.kind](ctx, d, m)
		done++
		if first.IsZero() && md != nil {
			first = md.Timestamp
		}
		if o.Progress != nil && time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(o.Progress, "\r%s %d events, at %s", bar(first, clock.now(), end), done,
				clock.now().Format(time.RFC3339))
		}
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "\rreplay: %d events done%20s\n", done, "")
	}
	return summarize(events, counters), nil
}

// bar draws how far at is from first to end.
func bar(first, at, end time.Time) string {
	const width = 30
	f := 1.0
	if total := end.Sub(first); total > 0 {
		f = min(max(float64(at.Sub(first))/float64(total), 0), 1)
	}
	n := int(f * width)
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", width-n), f*100)
}

// eventClock is "now" during a replay: the time of the event in hand.
type eventClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *eventClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *eventClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// errNoMetadata: a stored message whose stream position could not be
// read (a replay gives the decisions what the live consumer would).
var errNoMetadata = errors.New("replay: message metadata unreadable")

// applied applies a state event and counts its failure as the
// live state consumer does.
func applied(apply consumers.ApplyFunc, counters *metrics.Families, kind string) func(context.Context, engine.Delivery, jetstream.Msg) {
	return func(_ context.Context, _ engine.Delivery, m jetstream.Msg) {
		if err := apply(m); err != nil {
			var de *schemas.DecodeError
			if errors.As(err, &de) {
				counters.State(kind).Malformed.Inc(de.Reason)
				return
			}
			counters.State(kind).ApplyErrors.Inc()
		}
	}
}

// decided runs a trigger's decisions on a stored message. Its Outcome
// has nothing to settle: a Reject is counted as the live consumer counts
// it, a Retry (a response whose request is not in the replayed history)
// is already counted by the decision.
func decided(decide func(context.Context, engine.Delivery, engine.Message) engine.Outcome, counters *metrics.Families,
	kind string) func(context.Context, engine.Delivery, jetstream.Msg) {
	return func(ctx context.Context, d engine.Delivery, m jetstream.Msg) {
		if out := decide(ctx, d, consumers.MessageOf(m)); out.Verdict == engine.Reject {
			counters.Trigger(kind).Malformed.Inc(out.Reason())
		}
	}
}

// summarize reads the replay's typed counters. Errors are keyed by the
// counters' dotted names ("hintstream_requests_malformed_total|bad json"): the malformed,
// skipped and dropped series by label, apply errors and unknown parents.
// Zero values are left out.
func summarize(events map[string]uint64, c *metrics.Families) Summary {
	s := Summary{Events: map[string]uint64{}, Hints: map[string]uint64{}, Errors: map[string]uint64{}}
	for kind, n := range events {
		if n > 0 {
			s.Events[kind] = n
		}
	}
	for kind, q := range map[string]*metrics.Counter{"prefetch": c.HintsPrefetchQueued, "pin": c.HintsPinQueued,
		"release": c.HintsReleaseQueued, "renew": c.HintsRenewQueued} {
		if n := q.Value(); n > 0 {
			s.Hints[kind] = n
		}
	}
	for _, v := range []*metrics.CounterVec{c.RequestsMalformed, c.ResponsesMalformed, c.KVEventsMalformed, c.LoadMalformed,
		c.HintsPrefetchSkipped, c.HintsPinSkipped, c.AffinitySkipped, c.PinsRenewalSkipped,
		c.HintsPrefetchDropped, c.HintsPinDropped, c.HintsRenewDropped, c.HintsReleaseDropped,
		c.AffinityDropped, c.KVEventsDropped} {
		for lv, n := range v.Values() {
			if n > 0 {
				s.Errors[v.Name()+"|"+lv] = n
			}
		}
	}
	for _, e := range []*metrics.Counter{c.KVEventsApplyErrors, c.LoadApplyErrors, c.KVEventsUnknownParent} {
		if n := e.Value(); n > 0 {
			s.Errors[e.Name()] = n
		}
	}
	return s
}

// Lines renders a summary for people.
func (s Summary) Lines() []string {
	var out []string
	for _, part := range []struct {
		title string
		m     map[string]uint64
	}{{"events", s.Events}, {"hints", s.Hints}, {"errors", s.Errors}} {
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%-7s %-45s %d", part.title, k, part.m[k]))
		}
	}
	return out
}

// servedOnly narrows a trigger stream's subjects to the served models'.
func servedOnly(cfg streams.Config, served registry.Served, prefix string) streams.Config {
	cfg.Subjects = served.Subjects(cfg.Subjects, prefix)
	return cfg
}
