package actions_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/tinylib/msgp/msgp"
)

// A prefetch sent through the pool is accepted by an independent Python
// receiver that decodes as strictly as msgspec, with every field intact.
func TestPrefetchDecodedByPythonPeer(t *testing.T) {
	sink := pypeer.StartSink(t, 1)
	ep := sink.Endpoints()[0]
	exp := time.UnixMilli(1_700_000_000_123)
	env, err := actions.NewPrefetchEnvelope(actions.Prefetch{
		RequestID: "chatcmpl-9f1c2e", SessionID: "thread-42", Model: "Qwen/Qwen3-8B",
		TokenIDs: []uint32{0, 127, 128, 65536, 1<<32 - 1}, DpRank: 2, ExpiresAt: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	body, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t)
	if err := p.Send(ep, actions.Hint{MessageID: env.MessageID, Body: body, Deadline: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, func(m []pypeer.Received) bool { return len(m) == 1 }, "prefetch received")

	m := sink.Messages()[0]
	if !m.OK || m.Endpoint != ep {
		t.Fatalf("peer rejected the prefetch: %+v", m)
	}
	n := func(s string) json.Number { return json.Number(s) }
	want := map[string]any{
		"protocol_version": "0.1",
		"message_id":       "wake-3105907ff2792152",
		"actions": []any{map[string]any{
			"action_id":      "wake-3105907ff2792152/0",
			"action_type":    "kv.prefetch",
			"action_version": "1.0",
			"payload": map[string]any{
				"request_id":    "chatcmpl-9f1c2e",
				"session_id":    "thread-42",
				"model":         "Qwen/Qwen3-8B",
				"token_ids":     []any{n("0"), n("127"), n("128"), n("65536"), n("4294967295")},
				"dp_rank":       n("2"),
				"expires_at_ms": n("1700000000123"),
				"worker_id":     n("0"),
			},
		}},
	}
	if !reflect.DeepEqual(m.Envelope, want) {
		t.Fatalf("peer decoded\n%#v\nwant\n%#v", m.Envelope, want)
	}
}

// The peer is strict: a message_id sent as msgpack bin instead of str is
// rejected, as msgspec rejects it.
func TestPythonPeerRejectsBinString(t *testing.T) {
	sink := pypeer.StartSink(t, 1)
	ep := sink.Endpoints()[0]
	b := msgp.AppendMapHeader(nil, 3)
	b = msgp.AppendString(b, "protocol_version")
	b = msgp.AppendString(b, "0.1")
	b = msgp.AppendString(b, "message_id")
	b = msgp.AppendBytes(b, []byte("wake-1"))
	b = msgp.AppendString(b, "actions")
	b = msgp.AppendArrayHeader(b, 0)

	p := newPool(t)
	if err := p.Send(ep, actions.Hint{MessageID: "wake-1", Body: b, Deadline: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, func(m []pypeer.Received) bool { return len(m) == 1 }, "message received")
	m := sink.Messages()[0]
	if m.OK || !strings.Contains(m.Error, "$.message_id") {
		t.Fatalf("peer accepted a bin message_id: %+v", m)
	}
}
