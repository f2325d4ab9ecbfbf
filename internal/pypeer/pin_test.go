package pypeer

import (
	"strings"
	"testing"
	"time"
)

// pin builds a kv.pin envelope; replace swaps payload fields by key (a nil
// val deletes the field), extra appends payload fields.
func pin(replace map[string]func([]byte) []byte, extra ...field) []byte {
	payload := []field{
		{"slot", str("thread-42")},
		{"keys", arr(str("p_aa_0_k"), str("p_aa_0_v"))},
		{"ttl_ms", i64(97_500)},
		{"priority", i64(58)},
		{"tokens", i64(16384)},
	}
	var p []field
	for _, f := range payload {
		if v, ok := replace[f.key]; ok {
			if v == nil {
				continue
			}
			f.val = v
		}
		p = append(p, f)
	}
	p = append(p, extra...)
	return obj(
		field{"protocol_version", str("0.1")},
		field{"message_id", str("pin-1")},
		field{"actions", arr(obj(
			field{"action_id", str("pin-1/0")},
			field{"action_type", str("kv.pin")},
			field{"action_version", str("1.0")},
			field{"payload", obj(p...)},
		))},
	)(nil)
}

type fields = map[string]func([]byte) []byte

func TestSinkValidatesPin(t *testing.T) {
	accept := []struct {
		name string
		msg  []byte
	}{
		{"pin", pin(nil)},
		{"unknown payload key ignored", pin(nil, field{"note", bin("\x00")})},
		{"release, no keys", pin(fields{"keys": arr(), "ttl_ms": u64(0)})},
		{"priority bounds", pin(fields{"priority": u64(100)})},
		{"uint64 ttl", pin(fields{"ttl_ms": u64(1 << 63)})},
	}
	reject := []struct {
		name, want string
		msg        []byte
	}{
		{"bin slot", "Expected `str`, got `bytes` - at `$.actions[0].payload.slot`", pin(fields{"slot": bin("s")})},
		{"bin key", "Expected `str`, got `bytes` - at `$.actions[0].payload.keys[1]`", pin(fields{"keys": arr(str("k"), bin("k"))})},
		{"keys not a list", "Expected `array`, got `str` - at `$.actions[0].payload.keys`", pin(fields{"keys": str("k")})},
		{"nil keys", "Expected `array`, got `null`", pin(fields{"keys": func(b []byte) []byte { return append(b, 0xc0) }})},
		{"negative ttl", ">= 0 - at `$.actions[0].payload.ttl_ms`", pin(fields{"ttl_ms": i64(-1)})},
		{"priority 0", ">= 1 - at `$.actions[0].payload.priority`", pin(fields{"priority": u64(0)})},
		{"priority 101", "<= 100 - at `$.actions[0].payload.priority`", pin(fields{"priority": u64(101)})},
		{"float priority", "Expected `int`, got `float`", pin(fields{"priority": f64(5)})},
		{"bool tokens", "Expected `int`, got `bool` - at `$.actions[0].payload.tokens`", pin(fields{"tokens": boolean(false)})},
		{"negative tokens", ">= 0 - at `$.actions[0].payload.tokens`", pin(fields{"tokens": i64(-3)})},
		{"missing slot", "missing required field `slot`", pin(fields{"slot": nil})},
		{"missing tokens", "missing required field `tokens`", pin(fields{"tokens": nil})},
	}
	s := StartSink(t, 1)
	var msgs [][]byte
	for _, c := range accept {
		msgs = append(msgs, c.msg)
	}
	for _, c := range reject {
		msgs = append(msgs, c.msg)
	}
	push(t, s.Endpoints()[0], msgs...)
	s.WaitFor(t, 10*time.Second, func(m []Received) bool { return len(m) == len(msgs) }, "all pin cases")
	got := s.Messages() // PUSH/PULL on one connection keeps order
	for i, c := range accept {
		if m := got[i]; !m.OK {
			t.Errorf("%s: rejected: %s", c.name, m.Error)
		}
	}
	for i, c := range reject {
		if m := got[len(accept)+i]; m.OK || !strings.Contains(m.Error, c.want) {
			t.Errorf("%s: ok=%v error=%q, want rejection containing %q", c.name, m.OK, m.Error, c.want)
		}
	}
	p := got[0].Envelope["actions"].([]any)[0].(map[string]any)["payload"].(map[string]any)
	if keys := p["keys"].([]any); len(keys) != 2 || keys[1] != "p_aa_0_v" || p["slot"] != "thread-42" {
		t.Errorf("payload = %v", p)
	}
}
