package bridge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/ingest/bridge"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// envelopeFile reads a frame the independent Python builder wrote
// (ingest/eventplane/testdata/dynamo_frames.py).
func envelopeFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "eventplane", "testdata", name+".msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// epSetup starts JetStream with the KV-events, load and request streams
// capturing scope's event-plane subjects, as `hintstream bridge` makes them.
func epSetup(t *testing.T, scope eventplane.Scope) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Start(t))
	set := scope.ApplyGiven(streams.DefaultSet())
	for _, c := range []streams.Config{set.KVEvents, set.Load, set.Requests, set.DeadLetter} {
		if _, _, err := streams.Ensure(context.Background(), js, c); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

func startEventPlane(t *testing.T, js jetstream.JetStream, cfg bridge.EventPlaneConfig) *bridge.EventPlaneBridge {
	t.Helper()
	log := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := bridge.NewEventPlane(js, cfg, bridge.WithLogger(log))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after cancel, want nil", err)
			}
		case <-time.After(natstest.Within(3 * time.Second)):
			t.Error("Run did not return after cancel")
		}
	})
	return b
}

// TestEventPlaneBridgeDirect: two of Dynamo's ZMQ publishers, bound
// directly as each EventPublisher is (a worker's KV events and load, a
// router's ActiveSequenceEvents), stand-ins written in Python from the
// Rust source. The bridge puts every envelope, byte for byte, on the
// subject the NATS transport would use; KV events decode into the
// index's events, load into the load table's report, and the
// ActiveSequenceEvents reach a SequenceHandler. A skipped sequence is
// counted as a gap of its publisher; a truncated envelope, a short id
// frame and a frame whose ids disagree with its envelope are refused by
// reason; a duplicated frame is stored once.
func TestEventPlaneBridgeDirect(t *testing.T) {
	scope := eventplane.Scope{Namespace: "dynamo", Component: "backend", ActiveSequences: true}
	js := epSetup(t, scope)
	worker, router := pypeer.StartDynamoPub(t), pypeer.StartDynamoPub(t)
	b := startEventPlane(t, js, bridge.EventPlaneConfig{Endpoints: []string{worker.Endpoint(), router.Endpoint()}, Scope: scope})
	// One SUB socket, three topics, connected to both.
	for _, p := range []*pypeer.DynamoPub{worker, router} {
		if got := p.Await(3); !slices.Equal(sorted(got), sorted(bridge.EventPlaneTopics(scope))) {
			t.Fatalf("subscriptions %q", got)
		}
	}

	kv := []string{"kv_stored_device", "kv_stored_host_dp1", "kv_removed", "kv_cleared_legacy", "kv_stored_lora_disk"}
	var sent []pypeer.DynamoFrame
	for _, n := range kv {
		sent = append(sent, pypeer.DynamoFrame{Topic: eventplane.TopicKVEvents, Envelope: envelopeFile(t, n)})
	}
	sent = append(sent, pypeer.DynamoFrame{Topic: eventplane.TopicKVMetrics, Envelope: envelopeFile(t, "load_worker")})
	worker.Send(sent...)
	seqs := []string{"seq_add_nats", "seq_add_untracked_lora", "seq_add_legacy", "seq_batch_zmq"}
	for _, n := range seqs {
		router.Send(pypeer.DynamoFrame{Topic: eventplane.TopicActiveSequences, Envelope: envelopeFile(t, n)})
	}
	// Refused: a truncated envelope, an id frame of 7 bytes, ids that are
	// not the envelope's; stored once: the first AddRequest again.
	env := envelopeFile(t, "seq_add_nats")
	id := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	frame := func(e []byte) []byte { return eventplane.AppendZMQFrame(nil, e) }
	router.Raw(
		[][]byte{[]byte(eventplane.TopicActiveSequences), id(1), id(0), frame(env[:len(env)-10])},
		[][]byte{[]byte(eventplane.TopicActiveSequences), id(1)[:7], id(0), frame(env)},
		[][]byte{[]byte(eventplane.TopicActiveSequences), id(1), id(0), frame(env)},
	)
	router.Send(pypeer.DynamoFrame{Topic: eventplane.TopicActiveSequences, Envelope: env})

	want := bridge.EventPlaneStats{Received: 14, Published: 10, Malformed: 3, Repeated: 1,
		Gaps: 1, Missing: 296, Publishers: 4}
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats() == want }, "bridge counters")
	reasons := b.MalformedByReason()
	refused := []string{"envelope field of the wrong type", "publisher_id or sequence frame not 8 bytes",
		"frames and envelope disagree on publisher_id or sequence"}
	for _, r := range refused {
		if reasons[r] != 1 {
			t.Errorf("malformed by reason %v lacks %q", reasons, r)
		}
	}
	// Each refused message is copied, its reason in a header.
	dlq := natstest.Messages(t, js, streams.DefaultSet().DeadLetter.Name)
	if len(dlq) != len(refused) {
		t.Fatalf("%d dead-letter copies, want %d", len(dlq), len(refused))
	}
	for i, m := range dlq {
		if m.Subject != bridge.DefaultEventPlaneDeadLetter || m.Header.Get(bridge.HeaderDLQReason) != refused[i] ||
			m.Header.Get(bridge.HeaderZMQTopic) != eventplane.TopicActiveSequences {
			t.Errorf("dead-letter copy %d: %q %v", i, m.Subject, m.Header)
		}
	}

	// KV events: the envelope bytes on the component subject, each once,
	// in the publisher's order; they decode as the index reads them.
	msgs := natstest.Messages(t, js, streams.DefaultSet().KVEvents.Name)
	if len(msgs) != len(kv) {
		t.Fatalf("%d KV messages, want %d", len(msgs), len(kv))
	}
	var dec kvevents.Decoder
	for i, m := range msgs {
		if m.Subject != scope.Subject(eventplane.TopicKVEvents) || !bytes.Equal(m.Data, envelopeFile(t, kv[i])) {
			t.Fatalf("KV message %d on %q is not %s's envelope", i, m.Subject, kv[i])
		}
		batch, err := dec.Decode(kvevents.Message{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil || batch.Envelope == nil || len(batch.Events) != 1 {
			t.Fatalf("KV message %d: %+v %v", i, batch, err)
		}
		e := batch.Envelope
		if got := m.Header.Get(nats.MsgIdHdr); got != bridge.EventPlaneMsgID(e.PublisherID, e.Sequence) {
			t.Errorf("Msg-Id %q", got)
		}
	}
	loads := natstest.Messages(t, js, streams.DefaultSet().Load.Name)
	if len(loads) != 1 || !eventplane.IsLoadSubject(loads[0].Subject) {
		t.Fatalf("load messages %+v", loads)
	}
	if _, l, err := eventplane.DecodeLoad(loads[0].Data, schemas.Limits{}); err != nil || l.WorkerID != 7 || l.DecodeBlocks() != 12 {
		t.Fatalf("load %+v %v", l, err)
	}

	// ActiveSequenceEvents, through the consumer path to a handler.
	var handled []string
	r := &eventplane.SequenceReader{TrackGaps: true, Handler: eventplane.SequenceHandlerFunc(
		func(_ context.Context, env eventplane.Envelope, ev *eventplane.ActiveSequenceEvent) error {
			handled = append(handled, ev.RequestID+"/"+ev.Kind.String())
			return nil
		})}
	reqs := natstest.Messages(t, js, streams.DefaultSet().Requests.Name)
	if len(reqs) != len(seqs) {
		t.Fatalf("%d request-stream messages, want %d", len(reqs), len(seqs))
	}
	for _, m := range reqs {
		if err := r.Read(context.Background(), m.Subject, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"req-1/AddRequest", "req-2/AddRequest", "req-3/AddRequest", "req-4/AddRequest",
		"req-4/MarkPrefillCompleted", "req-1/Free"}; !slices.Equal(handled, want) {
		t.Fatalf("handled %v, want %v", handled, want)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestEventPlaneBridgeBroker: through a broker the topic frame is the
// whole subject, endpoint-scoped ones included; the bridge subscribes to
// the scope's prefix, keeps the subject, and skips a topic it does not
// bridge.
func TestEventPlaneBridgeBroker(t *testing.T) {
	scope := eventplane.Scope{Namespace: "dynamo", Component: "backend"}
	js := epSetup(t, scope)
	xpub := pypeer.StartDynamoPub(t) // the broker's XPUB side
	b := startEventPlane(t, js, bridge.EventPlaneConfig{Endpoints: []string{xpub.Endpoint()}, Broker: true, Scope: scope})
	if got := xpub.Await(1); !slices.Equal(got, []string{"namespace.dynamo.component.backend."}) {
		t.Fatalf("subscriptions %q", got)
	}
	loadSubj := scope.EndpointSubject("generate", eventplane.TopicKVMetrics)
	xpub.Send(pypeer.DynamoFrame{Topic: loadSubj, Envelope: envelopeFile(t, "load_worker")},
		pypeer.DynamoFrame{Topic: scope.EndpointSubject("generate", eventplane.TopicActiveSequences),
			Envelope: envelopeFile(t, "seq_add_nats")},
		pypeer.DynamoFrame{Topic: scope.Subject(eventplane.TopicKVEvents), Envelope: envelopeFile(t, "kv_removed")})
	natstest.Eventually(t, 10*time.Second, func() bool {
		s := b.Stats()
		return s.Received == 3 && s.Published == 2 && s.Skipped == 1
	}, "two bridged, active sequences skipped (not asked for)")
	loads := natstest.Messages(t, js, streams.DefaultSet().Load.Name)
	if len(loads) != 1 || loads[0].Subject != loadSubj {
		t.Fatalf("load messages %+v", loads)
	}
}

func TestEventPlaneBridgeConfig(t *testing.T) {
	_, js := natstest.Connect(t, natstest.Start(t))
	scope := eventplane.Scope{Namespace: "dynamo", Component: "backend"}
	for _, c := range []bridge.EventPlaneConfig{
		{Scope: scope},
		{Endpoints: []string{"tcp://127.0.0.1:1"}},
		{Endpoints: []string{"tcp://127.0.0.1:1"}, Scope: scope, Topics: []string{"kv.events"}},
	} {
		if err := bridge.NewEventPlane(js, c).Run(context.Background()); !errors.Is(err, bridge.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	// No stream captures the subjects: nothing would be kept.
	err := bridge.NewEventPlane(js, bridge.EventPlaneConfig{Endpoints: []string{"tcp://127.0.0.1:1"}, Scope: scope}).Run(context.Background())
	if !errors.Is(err, bridge.ErrNoStream) {
		t.Errorf("no stream: %v, want ErrNoStream", err)
	}
}
