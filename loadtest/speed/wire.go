package speed

import (
	"fmt"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// The load generator shares two CPUs with what it measures, so it does
// as little per message as it can: request events are spliced from a
// pre-encoded middle, and a hint's request id is read without decoding
// its tokens.

// requestTemplate is a wake-up's msgpack encoding minus its request_id
// and received_at_ms, which come first and last in the generated codec.
type requestTemplate struct{ middle []byte }

func newRequestTemplate(ev schemas.RequestEvent) (requestTemplate, error) {
	ev.RequestID, ev.ReceivedAtMs = "", 0
	full, err := ev.MarshalMsg(nil)
	if err != nil {
		return requestTemplate{}, err
	}
	head := msgp.AppendString(msgp.AppendString(msgp.AppendMapHeader(nil, 8), "request_id"), "")
	tail := msgp.AppendInt64(msgp.AppendString(nil, "received_at_ms"), 0)
	if len(full) < len(head)+len(tail) || string(full[:len(head)]) != string(head) ||
		string(full[len(full)-len(tail):]) != string(tail) {
		return requestTemplate{}, fmt.Errorf("speed: RequestEvent's msgpack layout changed")
	}
	return requestTemplate{middle: full[len(head) : len(full)-len(tail)]}, nil
}

// encode returns the event's msgpack with id and receivedAtMs filled in.
func (t requestTemplate) encode(id string, receivedAtMs int64) []byte {
	b := make([]byte, 0, len(t.middle)+len(id)+48)
	b = msgp.AppendString(msgp.AppendString(msgp.AppendMapHeader(b, 8), "request_id"), id)
	b = append(b, t.middle...)
	return msgp.AppendInt64(msgp.AppendString(b, "received_at_ms"), receivedAtMs)
}

// hintRequestID reads actions[0].payload.request_id from an encoded
// KvHintsEnvelope.
func hintRequestID(b []byte) (string, bool) {
	b, ok := field(b, "actions")
	if !ok {
		return "", false
	}
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil || n == 0 {
		return "", false
	}
	if b, ok = field(b, "payload"); !ok {
		return "", false
	}
	if b, ok = field(b, "request_id"); !ok {
		return "", false
	}
	s, _, err := msgp.ReadStringZC(b)
	return string(s), err == nil
}

// field positions b (a msgpack map) at the value of key.
func field(b []byte, key string) ([]byte, bool) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, false
	}
	for range n {
		var k []byte
		if k, b, err = msgp.ReadMapKeyZC(b); err != nil {
			return nil, false
		}
		if string(k) == key {
			return b, true
		}
		if b, err = msgp.Skip(b); err != nil {
			return nil, false
		}
	}
	return nil, false
}
