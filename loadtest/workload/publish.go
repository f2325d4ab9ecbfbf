package workload

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"
)

// PublishOption configures Publish.
type PublishOption func(*publishOpts)

type publishOpts struct {
	speed    float64
	workerOf func(i int) uint64
	announce bool
	window   int
	log      *slog.Logger
}

// WithSpeed plays the workload speed times faster than its own time
// (default 1); speed <= 0 publishes as fast as JetStream takes it, each
// event stamped with its publish time.
func WithSpeed(speed float64) PublishOption { return func(o *publishOpts) { o.speed = speed } }

// WithWorkerOf names the worker each response comes from (default:
// worker 1). Pins need it: they name the worker's Mooncake objects.
func WithWorkerOf(f func(request int) uint64) PublishOption {
	return func(o *publishOpts) {
		if f != nil {
			o.workerOf = f
		}
	}
}

// WithAnnounceToolTime makes requests that end in a tool call carry the
// tool time in x-dynamo-experimental-sim-tool-call (default off).
func WithAnnounceToolTime(on bool) PublishOption { return func(o *publishOpts) { o.announce = on } }

// WithWindow bounds the publishes awaiting their ack (default 256).
func WithWindow(n int) PublishOption {
	return func(o *publishOpts) {
		if n > 0 {
			o.window = n
		}
	}
}

// WithLogger sets the logger for lag warnings; default slog.Default().
func WithLogger(l *slog.Logger) PublishOption {
	return func(o *publishOpts) {
		if l != nil {
			o.log = l
		}
	}
}

// PublishStats is what Publish sent.
type PublishStats struct {
	Wakeups, Requests, Responses int
	Bytes                        int64
	// MaxLag is the most an event went out after its due time (paced
	// runs only).
	MaxLag  time.Duration
	Elapsed time.Duration
}

// Publish sends w's events to JetStream, in order: wake-ups and requests
// to streams.RequestSubject(w.Model), responses to
// streams.ResponseSubject(w.Model), as msgpack. Paced runs stamp events
// with their scheduled wall time. It stops at the first failed publish or
// when ctx ends, returning what was sent.
func Publish(ctx context.Context, js jetstream.JetStream, w *Workload, opts ...PublishOption) (PublishStats, error) {
	o := publishOpts{speed: 1, workerOf: func(int) uint64 { return 1 }, window: 256, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	var st PublishStats
	start := time.Now()
	var first time.Duration
	if len(w.Events) > 0 {
		first = w.Events[0].At
	}
	reqSubj, respSubj := streams.RequestSubject(w.Model), streams.ResponseSubject(w.Model)
	var pending []jetstream.PubAckFuture
	flush := func() error {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("workload: publish %s: %w", f.Msg().Subject, err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pending = pending[:0]
		return nil
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for _, ev := range w.Events {
		var epoch time.Time
		if o.speed > 0 {
			due := start.Add(time.Duration(float64(ev.At-first) / o.speed))
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return st, ctx.Err()
				}
			} else {
				st.MaxLag = max(st.MaxLag, -d)
			}
			// Stamp the event with its due wall time.
			epoch = due.Add(-ev.At)
		} else {
			epoch = time.Now().Add(-ev.At)
		}
		var m msgp.Marshaler
		subj := reqSubj
		switch ev.Kind {
		case KindWakeup:
			m, st.Wakeups = w.WakeupEvent(ev.Request, epoch), st.Wakeups+1
		case KindRequest:
			m, st.Requests = w.RequestEvent(ev.Request, epoch, o.announce), st.Requests+1
		case KindResponse:
			m, subj, st.Responses = w.ResponseEvent(ev.Request, o.workerOf(ev.Request), epoch), respSubj, st.Responses+1
		}
		data, err := m.MarshalMsg(nil)
		if err != nil {
			return st, fmt.Errorf("workload: encode %s %d: %w", ev.Kind, ev.Request, err)
		}
		msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{"Content-Type": []string{"application/msgpack"}}}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			return st, fmt.Errorf("workload: publish %s: %w", subj, err)
		}
		st.Bytes += int64(len(data))
		pending = append(pending, f)
		if len(pending) >= o.window {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	err := flush()
	st.Elapsed = time.Since(start)
	if st.MaxLag > time.Second {
		o.log.Warn("workload: publisher fell behind the schedule", "max_lag", st.MaxLag)
	}
	return st, err
}
