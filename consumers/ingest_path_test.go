package consumers

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// stackIndex is the in-memory index with the call stack of each Apply
// recorded: it stands where the index's own Apply is, at the bottom of
// the holding area it decorates.
type stackIndex struct {
	*index.Memory
	stacks [][]string
}

func (s *stackIndex) Apply(ev kvevents.Event) error {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	var stack []string
	for {
		f, more := frames.Next()
		stack = append(stack, f.Function)
		if !more {
			break
		}
	}
	s.stacks = append(s.stacks, stack)
	return s.Memory.Apply(ev)
}

// funcPackage is the import path of a runtime function name
// ("github.com/x/y/pkg.(*T).M" -> "github.com/x/y/pkg").
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// TestKVEventReachesIndexInFewFrames holds KV ingestion to one short
// path, apart from the decisions: a KV message of each format, read from
// JetStream and processed as the state consumer does (process, which
// dead-letters what does not decode), is decoded by the consumers'
// handler (ApplyKV, which calls kvevents.Decoder.Decode and has it return
// before the apply) and reaches the index through the one applier
// (index.Applier.Apply) and the holding area that decorates the index:
// 5 frames in 2 packages from the consumer down to the index's Apply,
// the engine on none.
func TestKVEventReachesIndexInFewFrames(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	scope := eventplane.Scope{Namespace: "ns", Component: "comp"}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KVPATH",
		Subjects: append([]string{"kv.events.>"}, scope.KVEventSubjects()...)}); err != nil {
		t.Fatal(err)
	}
	tokens := make([]uint32, 32)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	bridged := nats.NewMsg(streams.KVEventSubject(5))
	bridged.Data = engineBatch(tokens, 100)
	bridged.Header.Set("Hintstream-Epoch", "1")
	bridged.Header.Set("Hintstream-Seq", "2")
	msgs := []struct {
		format string
		msg    *nats.Msg
	}{
		{"dynamo json", &nats.Msg{Subject: streams.KVEventSubject(5),
			Data: []byte(`{"worker_id":5,"event":{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}}}}`)}},
		{"engine msgpack with bridge headers", bridged},
		{"event plane", &nats.Msg{Subject: scope.Subject(eventplane.TopicKVEvents), Data: epFrame(0, "kv-events")}},
	}
	for _, m := range msgs {
		if err := nc.PublishMsg(m.msg); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.OrderedConsumer(ctx, "KVPATH", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ix := &stackIndex{Memory: index.New()}
	counters := metrics.New()
	holding := index.NewHolding(ix, index.HoldingConfig{}, counters)
	holding.Register(5, 1)
	sc := NewStateConsumer(js, StateConfig{Kind: "kv_events", Stream: "KVPATH"},
		ApplyKV(index.NewApplier(holding, index.ApplierConfig{Counters: counters}), schemas.Limits{}), nil, counters, nil)
	for _, m := range msgs {
		msg, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("%s: %v", m.format, err)
		}
		ix.stacks = nil
		sc.process(msg)
		if n := counters.KVEventsApplyErrors.Value() + counters.KVEventsMalformed.Total(); n != 0 {
			t.Fatalf("%s: %d errors", m.format, n)
		}
		if len(ix.stacks) == 0 {
			t.Fatalf("%s: never reached the index", m.format)
		}
		stack := ix.stacks[len(ix.stacks)-1]
		entry := -1
		for i, fn := range stack {
			if strings.HasSuffix(fn, ".(*StateConsumer).process") {
				entry = i
				break
			}
		}
		if entry < 0 {
			t.Fatalf("%s: the consumer is not on the stack %q", m.format, stack)
		}
		path := stack[:entry+1] // the index's Apply up to the consumer
		pkgs := map[string]bool{}
		for _, fn := range path[1:] {
			pkgs[funcPackage(fn)] = true
		}
		pkgs[funcPackage("github.com/hintstream/hintstream/kvevents/index.(*Memory).Apply")] = true // path[0] stands in for it
		t.Logf("%s: %d frames across %d packages: %q", m.format, len(path), len(pkgs), path)
		if len(path) > 5 || len(pkgs) > 2 {
			t.Errorf("%s: %d frames across %d packages from the consumer to the index, want at most 5 across 2: %q",
				m.format, len(path), len(pkgs), path)
		}
		for _, fn := range path {
			if strings.Contains(fn, "/decide/") {
				t.Errorf("%s: the decisions are on the KV path: %q", m.format, path)
			}
		}
		for _, want := range []string{"/kvevents/index.(*Applier).Apply", "/kvevents/index.(*Holding).Apply"} {
			found := false
			for _, fn := range path {
				found = found || strings.HasSuffix(fn, want)
			}
			if !found {
				t.Errorf("%s: %s is not on the path %q", m.format, want, path)
			}
		}
	}
	// Each was applied: the two stored events, then the frame's clear.
	if s, c := counters.KVEventsApplied.Value("stored"), counters.KVEventsApplied.Value("cleared"); s != 2 || c != 1 {
		t.Fatalf("applied %d stored and %d cleared, want 2 and 1", s, c)
	}
}
