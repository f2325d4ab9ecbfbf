package schemas

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The vector was encoded by Python's msgpack with the reference field
// order; decoding it and encoding again must give the same bytes, since
// receivers drop duplicates by content.
func TestEnvelopeVector(t *testing.T) {
	data := readVector(t, "kv_hints_envelope.msgpack")
	var env KvHintsEnvelope
	rest, err := env.UnmarshalMsg(data)
	if err != nil || len(rest) != 0 {
		t.Fatalf("UnmarshalMsg: %v (%d bytes left)", err, len(rest))
	}
	var want struct {
		ProtocolVersion string `json:"protocol_version"`
		MessageID       string `json:"message_id"`
		Actions         []struct {
			ActionID      string `json:"action_id"`
			ActionType    string `json:"action_type"`
			ActionVersion string `json:"action_version"`
			Payload       struct {
				RequestID string   `json:"request_id"`
				TokenIDs  []uint32 `json:"token_ids"`
			} `json:"payload"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(readVector(t, "kv_hints_envelope.json"), &want); err != nil {
		t.Fatal(err)
	}
	if env.ProtocolVersion != ProtocolVersion || env.ProtocolVersion != want.ProtocolVersion ||
		env.MessageID != want.MessageID || len(env.Actions) != len(want.Actions) {
		t.Fatalf("got %+v, want %+v", env, want)
	}
	for i, a := range env.Actions {
		w := want.Actions[i]
		if a.ActionID != w.ActionID || a.ActionType != w.ActionType || a.ActionVersion != w.ActionVersion {
			t.Fatalf("action %d: %+v, want %+v", i, a, w)
		}
		var p PrefetchPayload
		if rest, err := p.UnmarshalMsg(a.Payload); err != nil || len(rest) != 0 {
			t.Fatalf("payload: %v", err)
		}
		if p.RequestID != w.Payload.RequestID || !reflect.DeepEqual(p.TokenIDs, w.Payload.TokenIDs) {
			t.Fatalf("payload %+v, want %+v", p, w.Payload)
		}
	}
	again, err := env.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("re-encoded envelope differs:\n got %x\nwant %x", again, data)
	}
}
