package eventplane

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// TestActiveSequencesOnNATS: the NATS transport's path on a real
// nats-server. A router with DYN_EVENT_PLANE=nats publishes each
// ActiveSequenceEvent with a plain core publish on its endpoint-scoped
// subject (frames from the independent Python builder); the request
// stream that --dynamo-active-sequences makes keeps them; read in order,
// every event reaches the handler, an unknown variant and a truncated
// envelope are refused by reason, and a skipped sequence is a gap.
func TestActiveSequencesOnNATS(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(20*time.Second))
	defer cancel()
	scope := Scope{Namespace: "dynamo", Component: "backend", ActiveSequences: true}
	req := scope.ApplyGiven(streams.DefaultSet()).Requests
	if _, _, err := streams.Ensure(ctx, js, req); err != nil {
		t.Fatal(err)
	}
	subj := scope.EndpointSubject("generate", TopicActiveSequences)
	unknown := reenvelope(TopicActiveSequences, seqPayload(func(b []byte) []byte { return msgp.AppendString(b, "Evict") }))
	good := frame(t, "seq_add_nats")
	frames := [][]byte{good, frame(t, "seq_add_untracked_lora"), unknown, good[:len(good)-7],
		frame(t, "seq_add_legacy"), reenvelopeAt(t, frame(t, "seq_add_legacy"), 4), frame(t, "seq_batch_zmq")}
	for _, f := range frames {
		if err := nc.Publish(subj, f); err != nil { // core NATS, as Dynamo's NatsTransport
			t.Fatal(err)
		}
	}
	c, err := js.OrderedConsumer(ctx, req.Name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var handled []string
	r := &SequenceReader{TrackGaps: true, Handler: SequenceHandlerFunc(func(_ context.Context, env Envelope, ev *ActiveSequenceEvent) error {
		handled = append(handled, ev.RequestID+"/"+ev.Kind.String())
		return nil
	})}
	var reasons []string
	for i := range frames {
		msg, err := c.Next(jetstream.FetchMaxWait(natstest.Within(5 * time.Second)))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var de *schemas.DecodeError
		switch err := r.Read(ctx, msg.Subject(), msg.Data()); {
		case errors.As(err, &de):
			reasons = append(reasons, de.Reason)
		case err != nil:
			t.Fatal(err)
		}
	}
	if want := []string{ReasonUnknownSequenceVariant, "envelope field of the wrong type"}; !slices.Equal(reasons, want) {
		t.Fatalf("refused %q, want %q", reasons, want)
	}
	if want := []string{"req-1/AddRequest", "req-2/AddRequest", "req-3/AddRequest", "req-3/AddRequest",
		"req-4/AddRequest", "req-4/MarkPrefillCompleted", "req-1/Free"}; !slices.Equal(handled, want) {
		t.Fatalf("handled %v, want %v", handled, want)
	}
	// The router's publisher sent 0, 1, 2, then 4: frame 3 never came.
	if st := r.Stats(); st.Gaps.Gaps != 1 || st.Gaps.Missing != 1 || st.Malformed[ReasonUnknownSequenceVariant] != 1 {
		t.Fatalf("stats %+v", st)
	}
}
