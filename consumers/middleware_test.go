package consumers

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// The dead-lettering middleware, around a handler that only returns its
// Outcome: a Reject is counted by its reason and copied, with the
// reason, to the dead-letter subject, and stays a Reject for the trigger
// to terminate; other Outcomes pass untouched and copy nothing; without
// a stream to store the copy the Reject becomes a retry after a second.
func TestDeadLetteringMiddleware(t *testing.T) {
	ctx, js, set := middlewareBus(t)
	subj := streams.RequestSubject("m")
	for _, body := range []string{"bad", "good", "bad again"} {
		if _, err := js.Publish(ctx, subj, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, set.Requests.Name, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msgs := fetch(t, cons, 3)
	counters := metrics.New()
	rej := rejecter{kind: "requests", dlq: NewDeadLetter(js, ""), counters: counters, log: slog.New(slog.DiscardHandler), ctx: ctx}
	h := rej.deadLettering(func(msg jetstream.Msg) engine.Outcome {
		if string(msg.Data()) == "good" {
			return engine.Done()
		}
		return engine.Rejected(&schemas.DecodeError{Kind: "request", Reason: "missing request_id"})
	})
	if out := h(msgs[0]); out.Verdict != engine.Reject || out.Reason() != "missing request_id" {
		t.Fatalf("rejected: %+v", out)
	}
	if out := h(msgs[1]); out.Verdict != engine.Ack {
		t.Fatalf("accepted: %+v", out)
	}
	if got := counters.RequestsMalformed.Value("missing request_id"); got != 1 {
		t.Fatalf("counted %d rejects, want 1", got)
	}
	dlq, err := js.Stream(ctx, set.DeadLetter.Name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetLastMsgForSubject(ctx, rej.dlq.Subject("requests"))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "bad" || m.Header.Get(HeaderDLQReason) != "missing request_id" {
		t.Fatalf("dead-letter copy %q, headers %v", m.Data, m.Header)
	}
	info, err := dlq.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("dead-letter stream: %v, %+v; want the one copy", err, info)
	}

	// No stream captures the copy: the event must come back, not go.
	if err := js.DeleteStream(ctx, set.DeadLetter.Name); err != nil {
		t.Fatal(err)
	}
	if out := h(msgs[2]); out.Verdict != engine.Retry || out.RetryAfter != time.Second || out.Err == nil {
		t.Fatalf("copy not stored: %+v; want a retry after 1s", out)
	}
}

// The state consumers' dead-lettering: a malformed event is counted,
// copied and skipped, not counted as not applied; another error is
// counted as not applied and not copied.
func TestStateDeadLettering(t *testing.T) {
	ctx, js, set := middlewareBus(t)
	for _, body := range []string{"bad", "other"} {
		if _, err := js.Publish(ctx, "kv.events.1", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.OrderedConsumer(ctx, set.KVEvents.Name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := fetch(t, cons, 2)
	counters := metrics.New()
	other := errors.New("index busy")
	c := NewStateConsumer(js, StateConfig{Stream: set.KVEvents.Name, Kind: "kv_events"}, func(msg jetstream.Msg) error {
		if string(msg.Data()) == "bad" {
			return &schemas.DecodeError{Kind: "router_event", Reason: "invalid event"}
		}
		return other
	}, NewDeadLetter(js, ""), counters, slog.New(slog.DiscardHandler))
	c.process(msgs[0])
	if got, na := counters.KVEventsMalformed.Value("invalid event"), counters.KVEventsApplyErrors.Value(); got != 1 || na != 0 {
		t.Fatalf("malformed: counted %d malformed and %d not applied, want 1 and 0", got, na)
	}
	c.process(msgs[1])
	if got, na := counters.KVEventsMalformed.Total(), counters.KVEventsApplyErrors.Value(); got != 1 || na != 1 {
		t.Fatalf("other error: counted %d malformed and %d not applied, want 1 and 1", got, na)
	}
	dlq, err := js.Stream(ctx, set.DeadLetter.Name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetLastMsgForSubject(ctx, "hintstream.dlq.kv_events")
	if err != nil || string(m.Data) != "bad" || m.Header.Get(HeaderDLQReason) != "invalid event" {
		t.Fatalf("dead-letter copy: %v %+v", err, m)
	}
}

// middlewareBus is a server with hintstream's streams, and a context
// bounding the test.
func middlewareBus(t *testing.T) (context.Context, jetstream.JetStream, streams.Set) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	return ctx, js, set
}

// fetch takes n messages from cons, unsettled.
func fetch(t *testing.T, cons jetstream.Consumer, n int) []jetstream.Msg {
	t.Helper()
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != n {
		t.Fatalf("fetched %d messages, want %d", len(msgs), n)
	}
	return msgs
}
