package consumers

import (
	"context"
	"errors"
	"github.com/hintstream/hintstream/decide/engine"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// epFrame is an event-plane frame of publisher 9 at seq whose RouterEvent
// (worker 5) is cleared, with extra leading RouterEvent fields.
func epFrame(seq uint64, topic string, extra ...any) []byte {
	return epFrameData(seq, topic, "cleared", extra...)
}

func epFrameData(seq uint64, topic string, data any, extra ...any) []byte {
	ev := mpMap{"worker_id", 5}
	ev = append(ev, extra...)
	ev = append(ev, "event", mpMap{"event_id", 1, "data", data, "dp_rank", 0})
	return mp(mpMap{"publisher_id", 9, "sequence", seq, "published_at", 0, "topic", topic, "payload", mpRaw(msgp.AppendBytes(nil, mp(ev)))})
}

// TestEventPlaneFrames: frames on an event-plane subject go through the
// eventplane decoder; one that fails to decode is a DecodeError (so the
// state consumer counts and dead-letters it), an ignored one still takes
// its place in the sequence, and a skipped sequence is an index gap.
func TestEventPlaneFrames(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	scope := eventplane.Scope{Namespace: "ns", Component: "comp"}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EP",
		Subjects: append(scope.KVEventSubjects(), scope.LoadSubjects()...)}); err != nil {
		t.Fatal(err)
	}
	kvSubj := scope.Subject(eventplane.TopicKVEvents)
	load := mp(mpMap{"worker_id", 5, "dp_rank", 1, "active_decode_blocks", 7, "active_prefill_tokens", nil,
		"scheduler_load_scope", "local", "kv_used_blocks", nil})
	frames := []struct {
		subject string
		data    []byte
	}{
		{kvSubj, epFrame(0, "kv-events")},
		{kvSubj, epFrame(1, "kv-events", "residency_domain", "cache_owner")},
		{kvSubj, epFrame(2, "kv-events", "storage_tier", "tape")},
		{kvSubj, epFrame(3, "kv-events")},
		{kvSubj, []byte{0x91, 0x01}},
		{kvSubj, epFrame(4, "kv_metrics")},
		{scope.EndpointSubject("generate", eventplane.TopicKVMetrics),
			mp(mpMap{"publisher_id", 3, "sequence", 0, "published_at", 0, "topic", "kv_metrics", "payload", mpRaw(msgp.AppendBytes(nil, load))})},
		{kvSubj, epFrameData(9, "kv-events", mpMap{"removed", mpMap{"block_hashes", mpArr{uint64(1)}}})},
	}
	for _, f := range frames {
		if err := nc.Publish(f.subject, f.data); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.OrderedConsumer(ctx, "EP", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ix := index.New()
	counters := metrics.New()
	loads := routing.NewLoadTable()
	eng := testEngine(t, engine.Decisions{}, engine.EngineDeps{Index: ix, Loads: loads, Counters: counters})
	applyKV := ApplyKV(index.NewApplier(ix, index.ApplierConfig{Counters: counters}), schemas.Limits{})
	applyLoad := ApplyMessages(eng.Load)
	k := kvevents.WorkerKey{WorkerID: 5}
	var reasons []string
	for i := range frames {
		msg, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		apply := applyKV
		if eventplane.IsLoadSubject(msg.Subject()) {
			apply = applyLoad
		}
		var de *schemas.DecodeError
		switch err := apply(msg); {
		case errors.As(err, &de):
			reasons = append(reasons, de.Reason)
		case err != nil:
			t.Fatalf("frame %d: %v", i, err)
		}
		if i == 3 && (ix.Stale(k) || ix.Stats().Gaps != 0) {
			t.Fatalf("ignored frames left a gap: %+v", ix.Stats())
		}
	}
	if len(reasons) != 2 || reasons[0] != "envelope not a msgpack map" || reasons[1] != "envelope topic is not kv-events" {
		t.Fatalf("decode errors %q", reasons)
	}
	if got := counters.KVEventsEventPlaneIgnored.Total(); got != 2 {
		t.Fatalf("%d frames ignored, want 2", got)
	}
	if c, r := counters.KVEventsApplied.Value("cleared"), counters.KVEventsApplied.Value("removed"); c != 2 || r != 1 {
		t.Fatalf("applied %d cleared and %d removed, want 2 and 1", c, r)
	}
	// Sequences 5-8 never came: one gap, worker stale.
	if !ix.Stale(k) || ix.Stats().Gaps != 1 {
		t.Fatalf("skipped sequences not a gap: stale %v, %+v", ix.Stale(k), ix.Stats())
	}
	if l := loads.Get(kvevents.WorkerKey{WorkerID: 5, DpRank: 1}); l.DecodeBlocks() != 7 {
		t.Fatalf("load %+v", l)
	}
}
