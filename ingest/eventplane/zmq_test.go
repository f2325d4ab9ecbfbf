package eventplane

import (
	"encoding/binary"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// zmqMessage is a ZMQ event-plane message for envelope bytes env, as
// ZmqPubTransport::publish sends it with topic frame topic.
func zmqMessage(t *testing.T, topic string, env []byte) [][]byte {
	t.Helper()
	e, err := DecodeEnvelope(env, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{[]byte(topic), binary.BigEndian.AppendUint64(nil, e.PublisherID),
		binary.BigEndian.AppendUint64(nil, e.Sequence), AppendZMQFrame(nil, env)}
}

func TestParseZMQ(t *testing.T) {
	scope := Scope{Namespace: "dynamo", Component: "backend"}
	kv := frame(t, "kv_stored_device")
	// Direct: the topic frame is the topic; the subject is the scope's.
	m, err := ParseZMQ(zmqMessage(t, TopicKVEvents, kv), schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Raw) != string(kv) || m.Envelope.Topic != TopicKVEvents || m.Subject(scope) != scope.Subject(TopicKVEvents) {
		t.Fatalf("direct: %+v subject %q", m, m.Subject(scope))
	}
	// Broker: the topic frame is the subject, kept as it is.
	subj := scope.EndpointSubject("generate", TopicKVMetrics)
	m, err = ParseZMQ(zmqMessage(t, subj, frame(t, "load_worker")), schemas.Limits{})
	if err != nil || m.Subject(scope) != subj || !IsLoadSubject(m.Subject(scope)) {
		t.Fatalf("broker: %+v %v", m, err)
	}
	// Bytes past the stated length are ignored, as Frame::decode does.
	msg := zmqMessage(t, TopicKVEvents, kv)
	msg[3] = append(msg[3], 0xc1, 0xc1)
	if m, err := ParseZMQ(msg, schemas.Limits{}); err != nil || string(m.Raw) != string(kv) {
		t.Fatalf("trailing bytes: %v", err)
	}

	good := func() [][]byte { return zmqMessage(t, TopicKVEvents, kv) }
	cases := []struct {
		name, want string
		edit       func([][]byte) [][]byte
	}{
		{"three frames", "not four frames [topic, publisher_id, sequence, frame]", func(f [][]byte) [][]byte { return f[1:] }},
		{"short id", "publisher_id or sequence frame not 8 bytes", func(f [][]byte) [][]byte { f[1] = f[1][:7]; return f }},
		{"version", "unsupported frame version", func(f [][]byte) [][]byte { f[3][0] = 2; return f }},
		{"no header", "frame shorter than its header", func(f [][]byte) [][]byte { f[3] = f[3][:4]; return f }},
		{"truncated", "frame shorter than its stated length", func(f [][]byte) [][]byte { f[3] = f[3][:len(f[3])-1]; return f }},
		{"truncated envelope", "envelope field of the wrong type", func(f [][]byte) [][]byte {
			f[3] = AppendZMQFrame(nil, kv[:len(kv)-9])
			return f
		}},
		{"sequence disagrees", "frames and envelope disagree on publisher_id or sequence", func(f [][]byte) [][]byte {
			f[2] = binary.BigEndian.AppendUint64(nil, 99)
			return f
		}},
		{"topic disagrees", "topic frame disagrees with the envelope's topic", func(f [][]byte) [][]byte {
			f[0] = []byte(TopicKVMetrics)
			return f
		}},
		{"subject of another topic", "topic frame disagrees with the envelope's topic", func(f [][]byte) [][]byte {
			f[0] = []byte(scope.Subject(TopicKVMetrics))
			return f
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseZMQ(c.edit(good()), schemas.Limits{})
			if got := reason(t, err); got != c.want {
				t.Errorf("reason %q, want %q", got, c.want)
			}
		})
	}
}
