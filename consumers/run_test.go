package consumers

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// TestRunStartsConsumesAndStopsOnCancel: Run starts a consumer Start has
// not, consumes, and returns nil once its context is cancelled, having
// stopped it (a request published afterwards stays pending); a Run after
// Start attaches to the started consumer.
func TestRunStartsConsumesAndStopsOnCancel(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	def := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, def); err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	dlq := NewDeadLetter(js, "")
	eng := testEngine(t, engine.Decisions{}, engine.EngineDeps{Index: index.New(), Counters: counters, Log: discard()})
	reqs := NewRequestConsumer(js, RequestConfig{Stream: def.Requests.Name}, eng.Request, dlq, counters, discard())
	kv := NewStateConsumer(js, StateConfig{Kind: "kv_events", Stream: def.KVEvents.Name},
		ApplyKV(index.NewApplier(index.New(), index.ApplierConfig{Counters: counters}), schemas.Limits{}), dlq, counters, discard())
	if err := kv.Start(ctx); err != nil { // Run after Start: attaches
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 2)
	go func() { errc <- reqs.Run(rctx) }()
	go func() { errc <- kv.Run(rctx) }()
	// An unserved (non-wake-up) request is acked without a hint.
	if _, err := js.Publish(ctx, streams.RequestSubject("m"), []byte(`{"request_id":"a","model":"m"}`)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return counters.RequestsReceived.Value() == 1 },
		"the request consumed under Run")
	cancel()
	for range 2 {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("Run = %v, want nil on cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return once its context was cancelled")
		}
	}
	if _, err := js.Publish(ctx, streams.RequestSubject("m"), []byte(`{"request_id":"b","model":"m"}`)); err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(ctx, def.Requests.Name, DefaultRequestsDurable)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 1
	}, "the request after cancel left pending")
	if got := counters.RequestsReceived.Value(); got != 1 {
		t.Fatalf("requests.received = %d after Run returned, want 1", got)
	}
}
