package eventplane

import (
	"errors"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// Kinds of the DecodeErrors returned here.
const (
	kindEnvelope = "event_plane"
	kindPayload  = "event_plane_router_event"
)

// Envelope is Dynamo's EventEnvelope as the msgpack codec writes it.
type Envelope struct {
	PublisherID uint64
	// Sequence starts at 0 and rises by one per frame of one publisher.
	Sequence uint64
	// PublishedAt is the publisher's clock, Unix milliseconds.
	PublishedAt uint64
	Topic       string
	// Payload aliases the frame's bytes.
	Payload []byte
}

func malformed(kind, reason string, err error) error {
	return &schemas.DecodeError{Kind: kind, Reason: reason, Err: err}
}

func fill(l schemas.Limits) schemas.Limits {
	def := schemas.DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = def.MaxBytes
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = def.MaxTokens
	}
	if l.MaxString <= 0 {
		l.MaxString = def.MaxString
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = def.MaxDepth
	}
	return l
}

// DecodeEnvelope decodes one frame's envelope. As serde does, it takes
// the map's keys in any order and skips unknown ones (a later revision's
// published_at_ns, say), but every one of Dynamo's five fields must be
// there exactly once with its type: unsigned integers, a UTF-8 str topic
// of at most lim.MaxString bytes, a bin payload. Bytes after the map are
// malformed. Zero fields of lim take schemas.DefaultLimits.
func DecodeEnvelope(data []byte, lim schemas.Limits) (Envelope, error) {
	lim = fill(lim)
	var env Envelope
	if len(data) > lim.MaxBytes {
		return env, malformed(kindEnvelope, "message too large", nil)
	}
	n, b, err := msgp.ReadMapHeaderBytes(data)
	if err != nil {
		return env, malformed(kindEnvelope, "envelope not a msgpack map", err)
	}
	const (
		fPub = 1 << iota
		fSeq
		fAt
		fTopic
		fPayload
		fAll = fPub | fSeq | fAt | fTopic | fPayload
	)
	var seen uint8
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return env, malformed(kindEnvelope, "envelope key not a string", err)
		}
		var bit uint8
		switch string(key) {
		case "publisher_id":
			bit = fPub
			env.PublisherID, b, err = msgp.ReadUint64Bytes(b)
		case "sequence":
			bit = fSeq
			env.Sequence, b, err = msgp.ReadUint64Bytes(b)
		case "published_at":
			bit = fAt
			env.PublishedAt, b, err = msgp.ReadUint64Bytes(b)
		case "topic":
			bit = fTopic
			var s []byte
			if s, b, err = msgp.ReadStringZC(b); err == nil {
				if len(s) > lim.MaxString || !utf8.Valid(s) {
					return env, malformed(kindEnvelope, "envelope topic too long or not UTF-8", nil)
				}
				env.Topic = string(s)
			}
		case "payload":
			bit = fPayload
			env.Payload, b, err = msgp.ReadBytesZC(b)
		default:
			if b, err = schemas.SkipMsgpack(b, lim.MaxDepth-1); err != nil {
				return env, malformed(kindEnvelope, skipReason(err), err)
			}
		}
		if err != nil {
			return env, malformed(kindEnvelope, "envelope field of the wrong type", err)
		}
		if seen&bit != 0 {
			return env, malformed(kindEnvelope, "envelope field repeated", nil)
		}
		seen |= bit
	}
	if seen != fAll {
		return env, malformed(kindEnvelope, "envelope field missing", nil)
	}
	if len(b) != 0 {
		return env, malformed(kindEnvelope, "trailing bytes after envelope", nil)
	}
	return env, nil
}

// KVFrame is one decoded kv-events frame.
type KVFrame struct {
	Envelope Envelope
	Event    *schemas.RouterEvent
	// Ignored says why a well-formed frame holds nothing to index; it is
	// one of the Ignore* constants (bounded, for a metric label). Event
	// is set all the same (its worker, dp rank and tier are meaningful).
	Ignored string
}

// Reasons a well-formed frame is skipped rather than indexed.
const (
	// IgnoreResidencyDomain: the event is owned by a cache owner (a
	// persistent cache), which Dynamo's lib/llm layer projects onto
	// workers; hintstream indexes worker-owned blocks only.
	IgnoreResidencyDomain = "residency_domain"
	// IgnoreTier: storage_tier is none of Dynamo's four.
	IgnoreTier = "unknown_tier"
)

// DecodeKVEvent decodes a kv-events frame: the envelope, whose topic must
// be "kv-events", and its RouterEvent payload (see DecodeRouterEvent).
func DecodeKVEvent(data []byte, lim schemas.Limits) (KVFrame, error) {
	lim = fill(lim)
	env, err := DecodeEnvelope(data, lim)
	if err != nil {
		return KVFrame{}, err
	}
	if env.Topic != TopicKVEvents {
		// Dynamo's subscriber drops a frame of another topic; on a subject
		// of ours it can only be a misconfigured publisher, so say so.
		return KVFrame{}, malformed(kindEnvelope, "envelope topic is not kv-events", nil)
	}
	ev, ignored, err := decodeRouterEvent(env.Payload, lim)
	if err != nil {
		return KVFrame{}, err
	}
	return KVFrame{Envelope: env, Event: ev, Ignored: ignored}, nil
}

// DecodeLoad decodes a kv_metrics frame: the envelope, whose topic must be
// "kv_metrics", and its ActiveLoad payload (msgpack map, decoded by
// schemas.Limits.DecodeLoad; scheduler_load_scope and other unknown keys
// are skipped, nil counters mean "not reported").
func DecodeLoad(data []byte, lim schemas.Limits) (Envelope, *schemas.ActiveLoad, error) {
	lim = fill(lim)
	env, err := DecodeEnvelope(data, lim)
	if err != nil {
		return env, nil, err
	}
	if env.Topic != TopicKVMetrics {
		return env, nil, malformed(kindEnvelope, "envelope topic is not kv_metrics", nil)
	}
	if len(env.Payload) == 0 || !schemas.IsMsgpackMap(env.Payload[0]) {
		return env, nil, malformed(kindEnvelope, "load payload not a msgpack map", nil)
	}
	l, err := lim.DecodeLoad(env.Payload, "application/msgpack")
	if err != nil {
		return env, nil, err
	}
	return env, l, nil
}

// skipReason is the DecodeError reason of a failed skip.
func skipReason(err error) string {
	if errors.Is(err, schemas.ErrMsgpackTooDeep) {
		return schemas.ErrMsgpackTooDeep.Error()
	}
	return "truncated msgpack"
}
