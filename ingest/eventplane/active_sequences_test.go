package eventplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
)

type seqSample struct {
	Name        string `json:"name"`
	Subject     string `json:"subject"`
	PublisherID uint64 `json:"publisher_id"`
	Sequence    uint64 `json:"sequence"`
	Batch       bool   `json:"batch"`
	Events      []struct {
		RequestID      string   `json:"request_id"`
		WorkerID       uint64   `json:"worker_id"`
		DpRank         uint32   `json:"dp_rank"`
		RouterID       uint64   `json:"router_id"`
		LoraName       string   `json:"lora_name"`
		Kind           string   `json:"kind"`
		Hashes         []uint64 `json:"hashes"`
		HasSequence    bool     `json:"has_sequence"`
		Track          bool     `json:"track_prefill_tokens"`
		ExpectedOutput *uint32  `json:"expected_output_tokens"`
		HintTokens     *uint64  `json:"hint_tokens"`
		HintDurationNs *int64   `json:"hint_duration_ns"`
		ISL            *uint64  `json:"isl"`
		Overlap        *uint32  `json:"overlap"`
	} `json:"events"`
}

func loadSeqSamples(t *testing.T) []seqSample {
	t.Helper()
	raw, err := os.ReadFile("testdata/sequences.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Samples []seqSample }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Samples) < 4 {
		t.Fatalf("only %d samples", len(doc.Samples))
	}
	return doc.Samples
}

// TestSequenceSamplesAreTheBuildersOutput: the checked-in frames are what
// the independent Python builder writes today.
func TestSequenceSamplesAreTheBuildersOutput(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command(pypeer.Python(), "testdata/dynamo_frames.py", "sequences", dir).CombinedOutput(); err != nil {
		t.Fatalf("builder: %v: %s", err, out)
	}
	for _, s := range loadSeqSamples(t) {
		got, err := os.ReadFile(filepath.Join(dir, s.Name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, frame(t, s.Name)) {
			t.Errorf("%s: checked-in frame differs from the builder's", s.Name)
		}
	}
}

// TestDecodeSequenceSamples reads every ActiveSequenceEvent frame as the
// Python builder says Dynamo meant it: singletons (NATS), a batch (ZMQ),
// today's AddRequest and the isl/overlap one of earlier revisions.
func TestDecodeSequenceSamples(t *testing.T) {
	for _, s := range loadSeqSamples(t) {
		t.Run(s.Name, func(t *testing.T) {
			if !IsActiveSequencesSubject(s.Subject) || IsKVEventsSubject(s.Subject) || IsLoadSubject(s.Subject) {
				t.Fatalf("subject %q not recognised as active_sequences_events", s.Subject)
			}
			fr, err := DecodeActiveSequences(frame(t, s.Name), schemas.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if fr.Envelope.PublisherID != s.PublisherID || fr.Envelope.Sequence != s.Sequence || fr.Batch != s.Batch {
				t.Errorf("envelope %+v batch %v, want publisher %d sequence %d batch %v",
					fr.Envelope, fr.Batch, s.PublisherID, s.Sequence, s.Batch)
			}
			if len(fr.Events) != len(s.Events) {
				t.Fatalf("%d events, want %d", len(fr.Events), len(s.Events))
			}
			for i, x := range s.Events {
				ev := fr.Events[i]
				if ev.RequestID != x.RequestID || ev.WorkerID != x.WorkerID || ev.DpRank != x.DpRank ||
					ev.RouterID != x.RouterID || ev.LoraName != x.LoraName || ev.Kind.String() != x.Kind {
					t.Errorf("event %d = %+v, want %+v", i, ev, x)
				}
				if ev.Kind != SequenceAdd {
					if ev.Add != nil {
						t.Errorf("event %d: %v with AddRequest fields", i, ev.Kind)
					}
					continue
				}
				a := ev.Add
				if !slices.Equal(a.SequenceHashes, x.Hashes) || a.HasSequence != x.HasSequence ||
					a.TrackPrefillTokens != x.Track || !eq32(a.ExpectedOutputTokens, x.ExpectedOutput) ||
					!eqp(a.ISL, x.ISL) || !eq32(a.Overlap, x.Overlap) {
					t.Errorf("event %d AddRequest = %+v, want %+v", i, a, x)
				}
				switch h := a.PrefillLoadHint; {
				case (h == nil) != (x.HintTokens == nil):
					t.Errorf("event %d hint = %+v, want tokens %v", i, h, x.HintTokens)
				case h != nil && h.InitialEffectivePrefillTokens != *x.HintTokens:
					t.Errorf("event %d hint tokens = %d, want %d", i, h.InitialEffectivePrefillTokens, *x.HintTokens)
				case h != nil && ((h.ExpectedPrefillDuration == nil) != (x.HintDurationNs == nil) ||
					x.HintDurationNs != nil && *h.ExpectedPrefillDuration != time.Duration(*x.HintDurationNs)):
					t.Errorf("event %d hint duration = %v, want %v ns", i, h.ExpectedPrefillDuration, x.HintDurationNs)
				}
			}
		})
	}
}

func eq32(a, b *uint32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// seqPayload builds one ActiveSequenceEvent map with data written by
// writeData.
func seqPayload(writeData func([]byte) []byte) []byte {
	b := msgp.AppendMapHeader(nil, 4)
	b = msgp.AppendString(b, "request_id")
	b = msgp.AppendString(b, "r")
	b = msgp.AppendString(b, "worker")
	b = msgp.AppendMapHeader(b, 2)
	b = msgp.AppendString(b, "worker_id")
	b = msgp.AppendUint64(b, 3)
	b = msgp.AppendString(b, "dp_rank")
	b = msgp.AppendUint32(b, 0)
	b = msgp.AppendString(b, "router_id")
	b = msgp.AppendUint64(b, 1)
	b = msgp.AppendString(b, "data")
	return writeData(b)
}

func TestDecodeSequenceRejects(t *testing.T) {
	good := frame(t, "seq_add_nats")
	env, err := DecodeEnvelope(good, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) func([]byte) []byte { return func(b []byte) []byte { return msgp.AppendString(b, s) } }
	hashes := func(n int) func([]byte) []byte {
		return func(b []byte) []byte {
			b = msgp.AppendMapHeader(b, 1)
			b = msgp.AppendString(b, "AddRequest")
			b = msgp.AppendMapHeader(b, 1)
			b = msgp.AppendString(b, "token_sequence")
			b = msgp.AppendArrayHeader(b, uint32(n))
			for i := range n {
				b = msgp.AppendUint64(b, uint64(i))
			}
			return b
		}
	}
	lim := schemas.Limits{MaxTokens: 8}
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"unknown unit variant", ReasonUnknownSequenceVariant, reenvelope(TopicActiveSequences, seqPayload(str("Evict")))},
		{"unknown struct variant", ReasonUnknownSequenceVariant, reenvelope(TopicActiveSequences, seqPayload(func(b []byte) []byte {
			b = msgp.AppendMapHeader(b, 1)
			b = msgp.AppendString(b, "NewBlock")
			return msgp.AppendArrayHeader(b, 0)
		}))},
		{"too many hashes", "too many sequence hashes", reenvelope(TopicActiveSequences, seqPayload(hashes(9)))},
		{"truncated envelope", "envelope field of the wrong type", good[:len(good)-len(env.Payload)/2]},
		{"truncated payload", "truncated msgpack", reenvelope(TopicActiveSequences, env.Payload[:len(env.Payload)-3])},
		{"wrong topic", "envelope topic is not active_sequences_events", reenvelope(TopicKVEvents, env.Payload)},
		{"no data", "missing data", reenvelope(TopicActiveSequences, func() []byte {
			b := msgp.AppendMapHeader(nil, 2)
			b = msgp.AppendString(b, "request_id")
			b = msgp.AppendString(b, "r")
			b = msgp.AppendString(b, "worker_id")
			return msgp.AppendUint64(b, 3)
		}())},
		{"event and batch", "payload is both an event and a batch", reenvelope(TopicActiveSequences, func() []byte {
			b := msgp.AppendMapHeader(nil, 2)
			b = msgp.AppendString(b, "request_id")
			b = msgp.AppendString(b, "r")
			b = msgp.AppendString(b, "events")
			return msgp.AppendArrayHeader(b, 0)
		}())},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeActiveSequences(c.data, lim)
			if got := reason(t, err); got != c.want {
				t.Errorf("reason %q, want %q (%v)", got, c.want, err)
			}
		})
	}
	// The limit is the only thing wrong with the long one.
	if fr, err := DecodeActiveSequences(reenvelope(TopicActiveSequences, seqPayload(hashes(8))), lim); err != nil ||
		len(fr.Events[0].Add.SequenceHashes) != 8 {
		t.Fatalf("8 hashes within the limit: %+v, %v", fr, err)
	}
}

// TestSequenceReader: the consumer path hands every event of a frame to
// the handler in order, counts by kind, refuses bad frames by reason
// without calling the handler, and counts a publisher's sequence gap.
func TestSequenceReader(t *testing.T) {
	var got []string
	r := &SequenceReader{TrackGaps: true, Handler: SequenceHandlerFunc(func(_ context.Context, env Envelope, ev *ActiveSequenceEvent) error {
		got = append(got, ev.RequestID+"/"+ev.Kind.String())
		return nil
	})}
	subj := Scope{Namespace: "dynamo", Component: "backend"}.EndpointSubject("generate", TopicActiveSequences)
	ctx := context.Background()
	for _, name := range []string{"seq_add_nats", "seq_add_untracked_lora", "seq_batch_zmq"} {
		if err := r.Read(ctx, subj, frame(t, name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	want := []string{"req-1/AddRequest", "req-2/AddRequest", "req-4/AddRequest", "req-4/MarkPrefillCompleted", "req-1/Free"}
	if !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	// seq_add_legacy is sequence 2 of the first publisher, after 0 and 1:
	// no gap. Sequence 9 of it is a gap of 6.
	if err := r.Read(ctx, subj, frame(t, "seq_add_legacy")); err != nil {
		t.Fatal(err)
	}
	skipped := reenvelopeAt(t, frame(t, "seq_add_legacy"), 9)
	if err := r.Read(ctx, subj, skipped); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(ctx, subj, reenvelope(TopicActiveSequences, seqPayload(func(b []byte) []byte { return msgp.AppendString(b, "Evict") }))); reason(t, err) != ReasonUnknownSequenceVariant {
		t.Fatalf("unknown variant: %v", err)
	}
	if err := r.Read(ctx, "kv.events.7", frame(t, "seq_add_nats")); reason(t, err) != ReasonNotSequencesSubject {
		t.Fatalf("foreign subject: %v", err)
	}
	st := r.Stats()
	if st.Frames != 5 || st.Events["AddRequest"] != 5 || st.Events["Free"] != 1 ||
		st.Malformed[ReasonUnknownSequenceVariant] != 1 || st.Malformed[ReasonNotSequencesSubject] != 1 {
		t.Errorf("stats %+v", st)
	}
	if st.Gaps.Gaps != 1 || st.Gaps.Missing != 6 || st.Gaps.Publishers != 2 {
		t.Errorf("gaps %+v, want one gap of 6 frames over 2 publishers", st.Gaps)
	}
	// A handler error stops the frame and comes back as it was.
	boom := errors.New("boom")
	r.Handler = SequenceHandlerFunc(func(context.Context, Envelope, *ActiveSequenceEvent) error { return boom })
	if err := r.Read(ctx, subj, frame(t, "seq_batch_zmq")); !errors.Is(err, boom) {
		t.Fatalf("handler error: %v", err)
	}
}

// reenvelopeAt rewrites a frame's envelope sequence.
func reenvelopeAt(t *testing.T, data []byte, seq uint64) []byte {
	t.Helper()
	env, err := DecodeEnvelope(data, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b := msgp.AppendMapHeader(nil, 5)
	b = msgp.AppendString(b, "publisher_id")
	b = msgp.AppendUint64(b, env.PublisherID)
	b = msgp.AppendString(b, "sequence")
	b = msgp.AppendUint64(b, seq)
	b = msgp.AppendString(b, "published_at")
	b = msgp.AppendUint64(b, env.PublishedAt)
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, env.Topic)
	b = msgp.AppendString(b, "payload")
	return msgp.AppendBytes(b, env.Payload)
}

func TestGaps(t *testing.T) {
	var g Gaps
	steps := []struct {
		pub, seq, missing uint64
		fresh             bool
	}{
		{1, 5, 0, true}, // joined late: not a gap
		{1, 6, 0, true},
		{1, 9, 2, true},
		{1, 9, 0, false}, // repeated
		{2, 0, 0, true},
		{1, 4, 0, false},
		{2, 1, 0, true},
	}
	for i, s := range steps {
		if m, f := g.Observe(s.pub, s.seq); m != s.missing || f != s.fresh {
			t.Errorf("step %d: (%d, %v), want (%d, %v)", i, m, f, s.missing, s.fresh)
		}
	}
	if st := g.Stats(); st != (GapStats{Publishers: 2, Gaps: 1, Missing: 2, Repeated: 2}) {
		t.Errorf("stats %+v", st)
	}
	for p := range uint64(MaxGapPublishers + 10) {
		g.Observe(100+p, 0)
	}
	if st := g.Stats(); st.Forgotten != 12 || len(g.last) != MaxGapPublishers {
		t.Errorf("after a flood: %+v, %d remembered", st, len(g.last))
	}
}
