package eventplane

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
)

// Dynamo's ZMQ event-plane transport
// (lib/runtime/src/transports/event_plane/zmq_transport.rs @
// 9dd09cdb79b22597f611c4a84682dfd2ebd55d90, frame.rs and mod.rs @
// 0e8f300946240739dd57dda47f7a2f331c0b2a36):
//
//   - each EventPublisher binds its own PUB socket, tcp://0.0.0.0:0 (an
//     ephemeral port; [::] for an IPv6 host), and registers
//     tcp://<DYN_EVENT_PLANE_HOST or the host's address>:<port> in
//     discovery (an EventChannel under its scope and topic, with its
//     publisher_id); subscribers find publishers there and connect;
//   - in broker mode (DYN_ZMQ_BROKER_URL="xsub=...,xpub=..." or
//     DYN_ZMQ_BROKER_ENABLED) publishers connect to the broker's XSUB and
//     subscribers to its XPUB, and the topic frame is the whole subject
//     (namespace.NS.component.COMP[.endpoint.EP].TOPIC) instead of the
//     topic;
//   - a message is four frames: [topic, publisher_id (u64 big-endian),
//     sequence (u64 big-endian), frame], frame being a 5-byte header
//     (version 1, payload length u32 big-endian) and the EventEnvelope
//     bytes, the very bytes the NATS transport publishes. Dynamo's
//     Frame::decode ignores bytes past the stated length; so does
//     ParseZMQ.
//
// PUB/SUB drops silently past the high-water mark (100,000 on both
// sides) and to a slow joiner; Dynamo has no replay on this transport.

// ZMQFrameVersion is frame.rs's FRAME_VERSION.
const ZMQFrameVersion = 1

// zmqFrameHeader is frame.rs's FRAME_HEADER_SIZE.
const zmqFrameHeader = 5

// kindZMQ is the DecodeError kind of a bad ZMQ event-plane message.
const kindZMQ = "event_plane_zmq"

// ZMQMessage is one message of Dynamo's ZMQ event plane, parsed.
type ZMQMessage struct {
	// Topic is the topic frame: the topic ("kv-events") from a publisher
	// bound directly, the whole subject through a broker.
	Topic string
	// Envelope is the envelope, decoded; its publisher_id and sequence
	// agree with the message's frames (ParseZMQ checks, as Dynamo's
	// ValidatedZmqSource does).
	Envelope Envelope
	// Raw is the envelope's bytes (within the message's last frame), to
	// republish unchanged.
	Raw []byte
}

// Subject is where the NATS transport would have published the message:
// the topic frame when it is a subject (broker mode), or else the scope's
// component subject of the envelope's topic. A publisher bound directly
// does not say whether it is component- or endpoint-scoped; hintstream's
// readers go by the subject's last token, so the component subject
// serves for both.
func (m ZMQMessage) Subject(s Scope) string {
	if strings.HasPrefix(m.Topic, subjectRoot) {
		return m.Topic
	}
	return s.Subject(m.Envelope.Topic)
}

// ParseZMQ parses a ZMQ event-plane message. Its errors are
// *schemas.DecodeErrors (errors.Is schemas.ErrMalformed) with a short
// reason: the frame count, the id frames, the frame header, the
// envelope, a disagreement between the frames and the envelope, or a
// topic frame that is neither the envelope's topic nor a subject ending
// in it. Zero fields of lim take schemas.DefaultLimits.
func ParseZMQ(frames [][]byte, lim schemas.Limits) (ZMQMessage, error) {
	lim = fill(lim)
	bad := func(reason string) (ZMQMessage, error) { return ZMQMessage{}, malformed(kindZMQ, reason, nil) }
	if len(frames) != 4 {
		return bad("not four frames [topic, publisher_id, sequence, frame]")
	}
	topic := frames[0]
	if len(topic) > lim.MaxString || !utf8.Valid(topic) {
		return bad("topic frame too long or not UTF-8")
	}
	if len(frames[1]) != 8 || len(frames[2]) != 8 {
		return bad("publisher_id or sequence frame not 8 bytes")
	}
	pub, seq := binary.BigEndian.Uint64(frames[1]), binary.BigEndian.Uint64(frames[2])
	f := frames[3]
	if len(f) < zmqFrameHeader {
		return bad("frame shorter than its header")
	}
	if f[0] != ZMQFrameVersion {
		return bad("unsupported frame version")
	}
	n := binary.BigEndian.Uint32(f[1:zmqFrameHeader])
	if uint64(n) > uint64(len(f)-zmqFrameHeader) {
		return bad("frame shorter than its stated length")
	}
	raw := f[zmqFrameHeader : zmqFrameHeader+int(n)]
	env, err := DecodeEnvelope(raw, lim)
	if err != nil {
		return ZMQMessage{}, err
	}
	if env.PublisherID != pub || env.Sequence != seq {
		return bad("frames and envelope disagree on publisher_id or sequence")
	}
	t := string(topic)
	if t != env.Topic && !(strings.HasPrefix(t, subjectRoot) && strings.HasSuffix(t, "."+encodeSegment(env.Topic))) {
		return bad("topic frame disagrees with the envelope's topic")
	}
	return ZMQMessage{Topic: t, Envelope: env, Raw: raw}, nil
}

// AppendZMQFrame appends the last frame of a message for envelope (its
// header and the envelope), as Dynamo's Frame::encode writes it: for
// tests and stand-ins.
func AppendZMQFrame(dst, envelope []byte) []byte {
	dst = append(dst, ZMQFrameVersion)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(envelope)))
	return append(dst, envelope...)
}
