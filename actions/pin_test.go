package actions_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

func TestPinMessageID(t *testing.T) {
	// Hex digests from Python's xxhash.xxh3_64_hexdigest.
	for _, c := range []struct {
		trigger string
		release bool
		want    string
	}{
		{"chatcmpl-9f1c2e", false, "pin-3105907ff2792152"},
		{"chatcmpl-9f1c2e", true, "unpin-3105907ff2792152"},
		{"req-1", false, "pin-b37c3beeb68532d6"},
		{"", false, "pin-2d06800538d394c2"},
		{"req-73", true, "unpin-0004f2e98bf656af"}, // leading zeros kept
	} {
		if got := actions.PinMessageID(c.trigger, c.release); got != c.want {
			t.Errorf("PinMessageID(%q, %v) = %s, want %s", c.trigger, c.release, got, c.want)
		}
	}
}

// pinPayloadBytes encodes a kv.pin payload independently of the generated
// codec, in the field order of schemas.PinPayload.
func pinPayloadBytes(slot string, keys []string, ttlMs, prio, tokens int64) []byte {
	b := msgp.AppendMapHeader(nil, 5)
	b = msgp.AppendString(b, "slot")
	b = msgp.AppendString(b, slot)
	b = msgp.AppendString(b, "keys")
	b = msgp.AppendArrayHeader(b, uint32(len(keys)))
	for _, k := range keys {
		b = msgp.AppendString(b, k)
	}
	b = msgp.AppendString(b, "ttl_ms")
	b = msgp.AppendInt64(b, ttlMs)
	b = msgp.AppendString(b, "priority")
	b = msgp.AppendInt64(b, prio)
	b = msgp.AppendString(b, "tokens")
	b = msgp.AppendInt64(b, tokens)
	return b
}

func TestNewPinEnvelope(t *testing.T) {
	keys := []string{"p_aa_0_k", "p_aa_0_v"}
	for _, c := range []struct {
		name      string
		pin       actions.Pin
		id        string
		ttlMs     int64
		prio      int64
		wantKeys  []string
		wantBytes []byte
	}{
		{"pin", actions.Pin{Trigger: "req-1", Slot: "thread-42", Keys: keys, TTL: 90 * time.Second, Priority: 58, Tokens: 16384},
			"pin-b37c3beeb68532d6", 90000, 58, keys, nil},
		// 1.5ms rounds up, 1ns too: a positive TTL must never read as a release.
		{"sub-ms ttl", actions.Pin{Trigger: "req-1", Slot: "s", Keys: keys, TTL: 1500 * time.Microsecond, Priority: 1},
			"pin-b37c3beeb68532d6", 2, 1, keys, nil},
		{"1ns ttl", actions.Pin{Trigger: "req-1", Slot: "s", Keys: keys, TTL: 1, Priority: 100},
			"pin-b37c3beeb68532d6", 1, 100, keys, nil},
		// A release with neither keys nor priority is sent with an empty
		// list (never nil: msgspec's list[str] rejects it) and priority 1.
		{"release", actions.Pin{Trigger: "req-1", Slot: "thread-42"},
			"unpin-b37c3beeb68532d6", 0, 1, []string{}, nil},
		{"release keeps priority", actions.Pin{Trigger: "req-1", Slot: "thread-42", Keys: keys, Priority: 7, Tokens: 3},
			"unpin-b37c3beeb68532d6", 0, 7, keys, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, err := actions.NewPinEnvelope(c.pin)
			if err != nil {
				t.Fatal(err)
			}
			body, err := actions.EncodeEnvelope(env)
			if err != nil {
				t.Fatal(err)
			}
			var got schemas.KvHintsEnvelope
			if rest, err := got.UnmarshalMsg(body); err != nil || len(rest) != 0 {
				t.Fatalf("decode: %v, %d trailing bytes", err, len(rest))
			}
			if got.ProtocolVersion != "0.1" || got.MessageID != c.id || len(got.Actions) != 1 {
				t.Fatalf("envelope = %+v", got)
			}
			a := got.Actions[0]
			if a.ActionID != c.id+"/0" || a.ActionType != "kv.pin" || a.ActionVersion != "1.0" {
				t.Fatalf("action = %+v", a)
			}
			want := pinPayloadBytes(c.pin.Slot, c.wantKeys, c.ttlMs, c.prio, int64(c.pin.Tokens))
			if !bytes.Equal(a.Payload, want) {
				t.Fatalf("payload\n% x\nwant\n% x", []byte(a.Payload), want)
			}
		})
	}
}

func TestNewPinEnvelopeRejectsBadInput(t *testing.T) {
	ok := actions.Pin{Trigger: "r", Slot: "s", Keys: []string{"k"}, TTL: time.Minute, Priority: 50, Tokens: 10}
	for name, mod := range map[string]func(*actions.Pin){
		"no trigger":       func(p *actions.Pin) { p.Trigger = "" },
		"no slot":          func(p *actions.Pin) { p.Slot = "" },
		"no keys":          func(p *actions.Pin) { p.Keys = nil },
		"empty key":        func(p *actions.Pin) { p.Keys = []string{"k", ""} },
		"priority 0":       func(p *actions.Pin) { p.Priority = 0 },
		"priority 101":     func(p *actions.Pin) { p.Priority = 101 },
		"release prio 101": func(p *actions.Pin) { p.TTL, p.Priority = 0, 101 },
		"negative ttl":     func(p *actions.Pin) { p.TTL = -time.Second },
		"ttl over 24h":     func(p *actions.Pin) { p.TTL = 24*time.Hour + time.Millisecond },
		"negative tokens":  func(p *actions.Pin) { p.Tokens = -1 },
		"bad utf8 slot":    func(p *actions.Pin) { p.Slot = "\xff" },
		"bad utf8 trigger": func(p *actions.Pin) { p.Trigger = "a\xc3" },
		"bad utf8 key":     func(p *actions.Pin) { p.Keys = []string{"k", "\xfe"} },
	} {
		p := ok
		mod(&p)
		if env, err := actions.NewPinEnvelope(p); !errors.Is(err, actions.ErrInvalidHint) {
			t.Errorf("%s: got %v, %v; want ErrInvalidHint", name, env, err)
		}
	}
	if _, err := actions.NewPinEnvelope(ok); err != nil {
		t.Fatalf("valid pin rejected: %v", err)
	}
	p := ok
	p.TTL = 24 * time.Hour // the maximum itself is allowed
	if _, err := actions.NewPinEnvelope(p); err != nil {
		t.Fatalf("24h pin rejected: %v", err)
	}
}

// A pin of the SGLang vector's object keys, and its release, sent through
// the pool, are accepted by the independent Python receiver with every
// key intact.
func TestPinDecodedByPythonPeer(t *testing.T) {
	c := sglangCases(t)[0]
	keys, err := actions.ObjectKeys(&c.Layout, c.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	pin := actions.Pin{
		Trigger: "chatcmpl-9f1c2e", Slot: "thread-42", Keys: keys,
		TTL: 97500 * time.Millisecond, Priority: actions.Priority(16384), Tokens: 16384,
	}
	release := actions.Pin{Trigger: "chatcmpl-9f1c2e", Slot: "thread-42"}

	sink := pypeer.StartSink(t, 1)
	ep := sink.Endpoints()[0]
	p := newPool(t)
	for _, pn := range []actions.Pin{pin, release} {
		env, err := actions.NewPinEnvelope(pn)
		if err != nil {
			t.Fatal(err)
		}
		body, err := actions.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Send(ep, actions.Hint{MessageID: env.MessageID, Body: body, Deadline: time.Now().Add(10 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	sink.WaitFor(t, 10*time.Second, func(m []pypeer.Received) bool { return len(m) == 2 }, "pin and release received")

	wantKeys := make([]any, len(c.ObjectKeys))
	for i, k := range c.ObjectKeys {
		wantKeys[i] = k
	}
	n := func(s string) json.Number { return json.Number(s) }
	envelope := func(id string, payload map[string]any) map[string]any {
		return map[string]any{
			"protocol_version": "0.1",
			"message_id":       id,
			"actions": []any{map[string]any{
				"action_id": id + "/0", "action_type": "kv.pin", "action_version": "1.0", "payload": payload,
			}},
		}
	}
	want := []map[string]any{
		envelope("pin-3105907ff2792152", map[string]any{
			"slot": "thread-42", "keys": wantKeys, "ttl_ms": n("97500"), "priority": n("58"), "tokens": n("16384"),
		}),
		envelope("unpin-3105907ff2792152", map[string]any{
			"slot": "thread-42", "keys": []any{}, "ttl_ms": n("0"), "priority": n("1"), "tokens": n("0"),
		}),
	}
	for i, m := range sink.Messages() { // one connection: order kept
		if !m.OK || m.Endpoint != ep {
			t.Fatalf("peer rejected message %d: %+v", i, m)
		}
		if !reflect.DeepEqual(m.Envelope, want[i]) {
			t.Errorf("message %d decoded\n%#v\nwant\n%#v", i, m.Envelope, want[i])
		}
	}
}

// The peer really checks kv.pin payloads: a priority of 0 is rejected.
func TestPythonPeerRejectsBadPin(t *testing.T) {
	env, err := actions.NewPinEnvelope(actions.Pin{Trigger: "r", Slot: "s", Keys: []string{"k"}, TTL: time.Minute, Priority: 1})
	if err != nil {
		t.Fatal(err)
	}
	env.Actions[0].Payload = pinPayloadBytes("s", []string{"k"}, 60000, 0, 0)
	body, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	sink := pypeer.StartSink(t, 1)
	ep := sink.Endpoints()[0]
	if err := newPool(t).Send(ep, actions.Hint{MessageID: env.MessageID, Body: body, Deadline: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, func(m []pypeer.Received) bool { return len(m) == 1 }, "message received")
	if m := sink.Messages()[0]; m.OK || !strings.Contains(m.Error, "$.actions[0].payload.priority") {
		t.Fatalf("peer accepted priority 0: %+v", m)
	}
}
