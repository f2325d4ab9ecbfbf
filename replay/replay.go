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
	"github.com/hintstream/hintstream/hints"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
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
	Sender consumers.HintSender
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
	// (cmd/hintstream/flags_decisions.go), the same defaults. Pins are
	// renewed on the events' clock, as run does on its.
	hints.Decisions
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
	defer reg.Stop()
	select {
	case <-reg.Ready():
	case <-ctx.Done():
		return Summary{}, ctx.Err()
	}
	o.Decisions = o.Decisions.WithDefaults()
	if err := o.Decisions.Validate(); err != nil {
		return Summary{}, err
	}
	counters := &metrics.Counters{}
	clock := &eventClock{}
	ix := o.NewIndex(o.Logger)
	loads := routing.NewLoadTable()
	served := registry.ServedModels(o.Models)
	sel := routing.NewSelector(served.View(reg), ix, loads, routing.WithConfig(*o.Routing), routing.WithLogger(o.Logger),
		routing.WithClock(clock.now)) // burst spreading decays on the events' clock, as live on its
	// KV events pass the live run's holding area; the registry's current
	// workers are registered in it.
	holding := consumers.NewHolding(ix, o.Holding, counters)
	for _, w := range reg.Workers() {
		holding.Register(w.WorkerID)
	}
	var sender consumers.HintSender = o.Sender
	if o.DryRun {
		sender = actions.NewRecorder(o.Out, nil)
	}
	dlq := consumers.NewDeadLetter(nil, "")
	var pins *consumers.Pinning
	if o.PinEndpoint != "" {
		pins = consumers.NewPinning(o.Decisions, consumers.PinDeps{Endpoint: o.PinEndpoint, Index: newMemRequests(),
			Slots: newMemSlots(), Workers: reg, Sender: sender, Counters: counters, Log: o.Logger, Now: clock.now})
	}
	// The live decisions, without their transport: requests and responses
	// go to the consumers' Decide (nothing to settle: each Outcome is only
	// counted), KV events and load to the live appliers.
	reqs := consumers.NewRequestConsumer(js, consumers.RequestConfig{Stream: o.Streams.Requests.Name,
		PrefetchTTL: o.PrefetchTTL, Limits: o.Limits, Clock: clock.now}, sel, sender, pins, dlq, counters, o.Logger)
	handlers := map[string]func(jetstream.Msg){
		"kv_events": applier(applyKV(holding, o, served, reg, counters), counters, "kv_events"),
		"load":      applier(consumers.ApplyLoad(loads, o.Limits), counters, "load"),
		"requests":  decider(reqs.Decide, counters, "requests"),
	}
	if pins != nil {
		resps := consumers.NewResponseConsumer(js, consumers.ResponseConfig{Stream: o.Streams.Responses.Name,
			Limits: o.Limits}, pins, dlq, counters, o.Logger)
		handlers["responses"] = decider(resps.Decide, counters, "responses")
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
		if md != nil {
			clock.set(md.Timestamp)
		}
		counters.Inc("events." + next.kind)
		handlers[next.kind](m)
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
	return summarize(counters), nil
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

func applier(apply consumers.ApplyFunc, counters *metrics.Counters, kind string) func(jetstream.Msg) {
	return func(m jetstream.Msg) {
		if err := apply(m); err != nil {
			var de *schemas.DecodeError
			if errors.As(err, &de) {
				counters.IncLabel(kind+".malformed", de.Reason)
				return
			}
			counters.Inc(kind + ".apply_errors")
		}
	}
}

// decider runs a trigger's decisions on a stored message. Its Outcome
// has nothing to settle: a Reject is counted as the live consumer counts
// it, a Retry (a response whose request is not in the replayed history)
// is already counted by the decision.
func decider(decide func(hints.Delivery, []byte, nats.Header) hints.Outcome, counters *metrics.Counters,
	kind string) func(jetstream.Msg) {
	return func(m jetstream.Msg) {
		d := hints.Delivery{Delivered: 1}
		if md, err := m.Metadata(); err != nil {
			d.Unknown = err
		} else {
			d.Seq, d.Time = md.Sequence.Stream, md.Timestamp
		}
		if out := decide(d, m.Data(), m.Headers()); out.Verdict == hints.Reject {
			counters.IncLabel(kind+".malformed", out.Reason())
		}
	}
}

func summarize(c *metrics.Counters) Summary {
	s := Summary{Events: map[string]uint64{}, Hints: map[string]uint64{}, Errors: map[string]uint64{}}
	for name, v := range c.Snapshot("") {
		switch {
		case len(name) > 7 && name[:7] == "events.":
			s.Events[name[7:]] = v
		case name == "hints.prefetch.queued":
			s.Hints["prefetch"] = v
		case name == "hints.pin.queued":
			s.Hints["pin"] = v
		case name == "hints.release.queued":
			s.Hints["release"] = v
		case name == "hints.renew.queued":
			s.Hints["renew"] = v
		case containsAny(name, ".malformed|", ".skipped|", ".dropped|", "apply_errors", "unknown_parent"):
			s.Errors[name] = v
		}
	}
	return s
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
	}
	return false
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

// applyKV is the KV-event apply function, skipping other models' workers
// when o.Models is set, as run's (service/cluster.go).
func applyKV(h *consumers.Holding, o Options, served registry.Served, reg *registry.Registry,
	counters *metrics.Counters) consumers.ApplyFunc {
	apply := consumers.ApplyKVEvents(h, o.Limits, counters)
	if served.All() {
		return apply
	}
	return consumers.KeepWorkers(apply, o.Limits, func(id uint64) bool { return served.KeepWorker(reg, id) }, counters)
}

// servedOnly narrows a trigger stream's subjects to the served models'.
func servedOnly(cfg streams.Config, served registry.Served, prefix string) streams.Config {
	cfg.Subjects = served.Subjects(cfg.Subjects, prefix)
	return cfg
}
