package workload

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/nats-io/nats.go/jetstream"
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
// streams.ResponseSubject(w.Model), as msgpack through client.Publisher
// (Nats-Msg-Id from the request id: a workload published twice within
// the streams' duplicate window is stored once). Paced runs stamp events
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
	pub, err := client.NewPublisher(js, client.WithFormat(client.Msgpack), client.WithMaxInFlight(o.window))
	if err != nil {
		return st, fmt.Errorf("workload: %w", err)
	}
	defer func() { _ = pub.Close(context.WithoutCancel(ctx)) }()
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
		var err error
		switch ev.Kind {
		case KindWakeup:
			st.Wakeups++
			r := w.WakeupEvent(ev.Request, epoch)
			err = pub.PublishRequest(ctx, r)
		case KindRequest:
			st.Requests++
			r := w.RequestEvent(ev.Request, epoch, o.announce)
			err = pub.PublishRequest(ctx, r)
		case KindResponse:
			st.Responses++
			r := w.ResponseEvent(ev.Request, o.workerOf(ev.Request), epoch)
			err = pub.PublishResponse(ctx, r)
		}
		st.Bytes = pub.Bytes()
		if err != nil {
			return st, fmt.Errorf("workload: publish %s %d: %w", ev.Kind, ev.Request, err)
		}
	}
	err = pub.Flush(ctx)
	st.Bytes = pub.Bytes()
	st.Elapsed = time.Since(start)
	if st.MaxLag > time.Second {
		o.log.Warn("workload: publisher fell behind the schedule", "max_lag", st.MaxLag)
	}
	return st, err
}
