package pypeer

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/tinylib/msgp/msgp"
)

// field appends one key and its value to a msgpack map being built.
type field struct {
	key string
	val func([]byte) []byte
}

func str(s string) func([]byte) []byte {
	return func(b []byte) []byte { return msgp.AppendString(b, s) }
}
func bin(s string) func([]byte) []byte {
	return func(b []byte) []byte { return msgp.AppendBytes(b, []byte(s)) }
}
func u64(v uint64) func([]byte) []byte {
	return func(b []byte) []byte { return msgp.AppendUint64(b, v) }
}
func i64(v int64) func([]byte) []byte { return func(b []byte) []byte { return msgp.AppendInt64(b, v) } }
func f64(v float64) func([]byte) []byte {
	return func(b []byte) []byte { return msgp.AppendFloat64(b, v) }
}
func boolean(v bool) func([]byte) []byte {
	return func(b []byte) []byte { return msgp.AppendBool(b, v) }
}

func obj(fs ...field) func([]byte) []byte {
	return func(b []byte) []byte {
		b = msgp.AppendMapHeader(b, uint32(len(fs)))
		for _, f := range fs {
			b = f.val(msgp.AppendString(b, f.key))
		}
		return b
	}
}

func arr(vs ...func([]byte) []byte) func([]byte) []byte {
	return func(b []byte) []byte {
		b = msgp.AppendArrayHeader(b, uint32(len(vs)))
		for _, v := range vs {
			b = v(b)
		}
		return b
	}
}

// prefetch builds a kv.prefetch envelope; replace swaps payload fields by
// key (a nil val deletes the field), extra appends envelope fields.
func prefetch(replace map[string]func([]byte) []byte, extra ...field) []byte {
	payload := []field{
		{"request_id", str("req-9")},
		{"session_id", str("sess")},
		{"model", str("Qwen/Qwen3-8B")},
		{"token_ids", arr(u64(0), u64(7), u64(1<<32-1))},
		{"dp_rank", u64(1)},
		{"expires_at_ms", i64(1_700_000_000_123)},
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
	env := append([]field{
		{"protocol_version", str("0.1")},
		{"message_id", str("wake-1")},
		{"actions", arr(obj(
			field{"action_id", str("wake-1/0")},
			field{"action_type", str("kv.prefetch")},
			field{"action_version", str("1.0")},
			field{"payload", obj(p...)},
		))},
	}, extra...)
	return obj(env...)(nil)
}

func push(t *testing.T, endpoint string, msgs ...[]byte) {
	t.Helper()
	sock, err := zmq.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if err := sock.SetLinger(5 * time.Second); err != nil { // outlive Close until sent
		t.Fatal(err)
	}
	if err := sock.Connect(endpoint); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := sock.SendBytes(m, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSinkAcceptsValidPrefetch(t *testing.T) {
	s := StartSink(t, 2)
	eps := s.Endpoints()
	if len(eps) != 2 || eps[0] == eps[1] || !strings.HasPrefix(eps[0], "tcp://127.0.0.1:") {
		t.Fatalf("endpoints = %v", eps)
	}
	// Unknown envelope fields are ignored, as msgspec does, even bin ones.
	push(t, eps[1], prefetch(nil, field{"trace", bin("\x01\x02")}))
	s.WaitFor(t, 10*time.Second, func(m []Received) bool { return len(m) == 1 }, "one message")

	m := s.Messages()[0]
	if !m.OK || m.Endpoint != eps[1] {
		t.Fatalf("got %+v, want ok on %s", m, eps[1])
	}
	if got := m.Envelope["message_id"]; got != "wake-1" {
		t.Errorf("message_id = %v", got)
	}
	p := m.Envelope["actions"].([]any)[0].(map[string]any)["payload"].(map[string]any)
	toks := p["token_ids"].([]any)
	if len(toks) != 3 || toks[2] != json.Number("4294967295") {
		t.Errorf("token_ids = %v", toks)
	}
	if p["expires_at_ms"] != json.Number("1700000000123") || p["model"] != "Qwen/Qwen3-8B" {
		t.Errorf("payload = %v", p)
	}
}

func TestSinkIsStrict(t *testing.T) {
	cases := []struct {
		name string
		msg  []byte
		want string
	}{
		{"bin message_id", obj(field{"protocol_version", str("0.1")}, field{"message_id", bin("m")}, field{"actions", arr()})(nil),
			"Expected `str`, got `bytes` - at `$.message_id`"},
		{"missing actions", obj(field{"protocol_version", str("0.1")}, field{"message_id", str("m")})(nil),
			"missing required field `actions`"},
		{"array envelope", arr(str("0.1"), str("m"), arr())(nil), "Expected `object`, got `array`"},
		{"bin request_id", prefetch(map[string]func([]byte) []byte{"request_id": bin("r")}), "$.actions[0].payload.request_id"},
		{"float token", prefetch(map[string]func([]byte) []byte{"token_ids": arr(u64(1), f64(2))}), "Expected `int`, got `float`"},
		{"token over u32", prefetch(map[string]func([]byte) []byte{"token_ids": arr(u64(1 << 32))}), "<= 4294967295"},
		{"negative token", prefetch(map[string]func([]byte) []byte{"token_ids": arr(i64(-1))}), ">= 0"},
		{"bool dp_rank", prefetch(map[string]func([]byte) []byte{"dp_rank": boolean(true)}), "Expected `int`, got `bool`"},
		{"missing dp_rank", prefetch(map[string]func([]byte) []byte{"dp_rank": nil}), "missing required field `dp_rank`"},
		{"trailing bytes", append(prefetch(nil), 0xc0), "malformed"},
	}
	s := StartSink(t, 1)
	msgs := make([][]byte, len(cases))
	for i, c := range cases {
		msgs[i] = c.msg
	}
	push(t, s.Endpoints()[0], msgs...)
	s.WaitFor(t, 10*time.Second, func(m []Received) bool { return len(m) == len(cases) }, "all cases")
	for i, m := range s.Messages() { // PUSH/PULL on one connection keeps order
		c := cases[i]
		if m.OK || !strings.Contains(m.Error, c.want) {
			t.Errorf("%s: ok=%v error=%q, want rejection containing %q", c.name, m.OK, m.Error, c.want)
		}
	}
}
