package engine

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
)

// FuzzDecode feeds arbitrary bytes, under each kind of subject and
// content type, to the engine's decoders (the ones run and replay share):
// none may panic, and every refusal must be a malformed-input error (to be
// counted and dead-lettered), never another kind.
func FuzzDecode(f *testing.F) {
	f.Add(uint8(0), []byte(`{"worker_id":7,"event":{"event_id":1,"data":{"cleared":null}}}`), "")
	f.Add(uint8(1), []byte(`{"worker_id":3,"active_decode_blocks":4}`), "application/json")
	f.Add(uint8(2), []byte(`{"request_id":"r","model":"m","token_ids":[1,2],"headers":{"x-dynamo-experimental-wakeup":"1"}}`), "")
	f.Add(uint8(3), []byte(`{"request_id":"r","worker_id":1,"finish_reason":"tool_calls"}`), "")
	f.Add(uint8(4), []byte{0x93, 0x01, 0x02, 0x90}, "application/msgpack")
	f.Add(uint8(5), []byte{0x85}, "")
	scope := eventplane.Scope{Namespace: "ns", Component: "comp"}
	subjects := []string{"kv.events.7", "kv.load.3", "llm.requests.m", "llm.responses.m",
		scope.Subject(eventplane.TopicKVEvents), scope.EndpointSubject("generate", eventplane.TopicKVMetrics)}
	if !eventplane.IsKVEventsSubject(subjects[4]) || !eventplane.IsLoadSubject(subjects[5]) {
		f.Fatalf("event-plane subjects %q not recognised", subjects[4:])
	}
	lim := schemas.Limits{}
	f.Fuzz(func(t *testing.T, which uint8, data []byte, contentType string) {
		m := Message{Subject: subjects[int(which)%len(subjects)], Data: data,
			Header: nats.Header{"Content-Type": {contentType}, "X-Dynamo-Wakeup": {contentType}}}
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("%s on %s: %v is not ErrMalformed", what, m.Subject, err)
			}
		}
		// KV events are kvevents.FuzzDecode's.
		_, err := DecodeLoad(lim, m)
		check("DecodeLoad", err)
		_, _, err = DecodeRequest(lim, m)
		check("DecodeRequest", err)
		_, err = DecodeResponse(lim, m)
		check("DecodeResponse", err)
	})
}
