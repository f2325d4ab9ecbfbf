package schemas

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// reqMsg encodes a msgpack map of the given keys and values, each value in
// its smallest msgpack form.
func reqMsg(kv ...any) []byte {
	b := msgp.AppendMapHeader(nil, uint32(len(kv)/2))
	for i := 0; i < len(kv); i += 2 {
		b = msgp.AppendString(b, kv[i].(string))
		switch v := kv[i+1].(type) {
		case []uint32:
			b = msgp.AppendArrayHeader(b, uint32(len(v)))
			for _, x := range v {
				b = msgp.AppendUint32(b, x)
			}
		case []int64:
			b = msgp.AppendArrayHeader(b, uint32(len(v)))
			for _, x := range v {
				b = msgp.AppendInt64(b, x)
			}
		case map[string]string:
			b = msgp.AppendMapStrStr(b, v)
		default:
			var err error
			if b, err = msgp.AppendIntf(b, v); err != nil {
				panic(err)
			}
		}
	}
	return b
}

// sameRequest fails unless DecodeRequest gives the same value and the
// same error with its fast paths as without them.
func sameRequest(t *testing.T, l Limits, data []byte, contentType string) {
	t.Helper()
	fast, ferr := l.decodeRequest(data, contentType, true)
	slow, serr := l.decodeRequest(data, contentType, false)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q (%q):\nfast %+v, %v\nslow %+v, %v", data, contentType, fast, ferr, slow, serr)
	}
}

func TestFastRequestMsgpack(t *testing.T) {
	full := mustMsg(t, &RequestEvent{RequestID: "r1", SessionID: "s", Model: "m", TokenIDs: []uint32{0, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1},
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1", "a": ""}, LoraName: "l", CacheSalt: "c", ReceivedAtMs: 1700000000000})
	cases := []struct {
		name string
		in   []byte
		fast bool // the fast path takes it
	}{
		{"full", full, true},
		{"leading blank", append([]byte(" \n"), full...), true},
		{"empty tokens and headers", reqMsg("request_id", "r", "token_ids", []uint32{}, "headers", map[string]string{}), true},
		{"empty map", []byte{0x80}, true},
		{"map16", []byte{0xde, 0, 1, 0xaa, 'r', 'e', 'q', 'u', 'e', 's', 't', '_', 'i', 'd', 0xa1, 'r'}, true},
		{"str8 value", reqMsg("request_id", strings.Repeat("x", 40)), true},
		{"negative time", reqMsg("request_id", "r", "received_at_ms", int64(-5)), true},
		{"int64 time", reqMsg("request_id", "r", "received_at_ms", int64(1<<40)), true},
		{"unknown key", reqMsg("request_id", "r", "x", 1), false},
		{"repeated key", reqMsg("request_id", "a", "request_id", "b"), false},
		{"repeated header", []byte{0x81, 0xa7, 'h', 'e', 'a', 'd', 'e', 'r', 's', 0x82, 0xa1, 'a', 0xa0, 0xa1, 'a', 0xa0}, false},
		{"bin key", []byte{0x81, 0xc4, 1, 'x', 0xa0}, false},
		{"bin value", reqMsg("request_id", []byte("r")), false},
		{"nil value", reqMsg("request_id", nil), false},
		{"uint64 token", []byte{0x81, 0xa9, 't', 'o', 'k', 'e', 'n', '_', 'i', 'd', 's', 0x91, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1}, false},
		{"negative token", reqMsg("token_ids", []int64{-1}), false},
		{"float time", reqMsg("received_at_ms", 1.5), false},
		{"too many tokens", reqMsg("request_id", "r", "token_ids", make([]uint32, 9)), false},
		{"too many headers", reqMsg("request_id", "r", "headers", map[string]string{"a": "", "b": "", "c": ""}), false},
		{"long string", reqMsg("request_id", strings.Repeat("x", 65)), false},
		{"invalid UTF-8", reqMsg("request_id", "\xff"), false},
		{"truncated", full[:len(full)-1], false},
		{"trailing bytes", append(append([]byte{}, full...), 0xc0), false},
		{"claimed tokens", []byte{0x81, 0xa9, 't', 'o', 'k', 'e', 'n', '_', 'i', 'd', 's', 0xdd, 0, 0, 0, 2, 1}, false},
	}
	lim := Limits{MaxTokens: 8, MaxHeaders: 2, MaxString: 64}.withDefaults()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got RequestEvent
			if ok := lim.fastMsgpack(c.in, "", &got); ok != c.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, c.fast)
			}
			if c.fast {
				// Accepted: the checked path decodes it to the same value.
				var want RequestEvent
				if err := lim.decode("request", c.in, "", &want); err != nil {
					t.Fatalf("fast path accepted what the checked path rejects: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("fast %+v\nslow %+v", got, want)
				}
			}
			sameRequest(t, lim, c.in, "")
			sameRequest(t, lim, c.in, "application/msgpack")
		})
	}
}

// TestFastRequestMsgpackLimits: a nesting limit the fast path cannot see
// through sends the event down the checked path, which names it.
func TestFastRequestMsgpackLimits(t *testing.T) {
	data := benchRequestMsgpack(t)
	var ev RequestEvent
	if (Limits{MaxDepth: 1}).withDefaults().fastMsgpack(data, "", &ev) {
		t.Fatal("fast path took it under MaxDepth 1")
	}
	_, err := Limits{MaxDepth: 1}.DecodeRequest(data, "")
	wantDecodeError(t, err, "request", reasonDeepMsgpack)
	_, err = Limits{MaxTokens: 2047}.DecodeRequest(data, "")
	wantDecodeError(t, err, "request", "too many token_ids")
}

// FuzzFastRequestMsgpack: DecodeRequest gives the same value and the same
// error with its fast paths as without them, so whatever the msgpack fast
// path accepts the checked path accepts with the same value.
func FuzzFastRequestMsgpack(f *testing.F) {
	f.Add(mustMsg(f, &RequestEvent{RequestID: "r1", SessionID: "s", Model: "m", TokenIDs: []uint32{0, 200, 70000, 1<<32 - 1},
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}, LoraName: "l", CacheSalt: "c", ReceivedAtMs: 12}))
	f.Add(mustMsg(f, &RequestEvent{RequestID: "r", ReceivedAtMs: -1}))
	f.Add(reqMsg("request_id", "r", "token_ids", []uint32{}, "headers", map[string]string{}))
	f.Add(reqMsg("request_id", "r", "token_ids", []uint32{1, 2, 3, 4, 5}, "received_at_ms", int64(-1<<40)))
	small := Limits{MaxTokens: 4, MaxHeaders: 2, MaxString: 8, MaxDepth: 2}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameRequest(t, fuzzLimits, data, "")
		sameRequest(t, small, data, "application/msgpack")
	})
}

// benchRequestMsgpack is benchRequest's 2,048-token wake-up request in
// msgpack, as the generated encoder writes it.
func benchRequestMsgpack(tb testing.TB) []byte {
	ids := make([]uint32, 2048)
	for i := range ids {
		ids[i] = uint32(i * 7919 % 152064)
	}
	return mustMsg(tb, &RequestEvent{RequestID: "bench-1", SessionID: "s", Model: "m", TokenIDs: ids,
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
}

// BenchmarkDecodeRequestMsgpack compares DecodeRequest with and without
// its fast path on a 2,048-token wake-up request, in one run:
//
//	go test -run '^$' -bench DecodeRequestMsgpack -benchmem -cpu 1 ./schemas/
func BenchmarkDecodeRequestMsgpack(b *testing.B) {
	data := benchRequestMsgpack(b)
	for _, c := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"checked", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Limits{}).decodeRequest(data, "application/msgpack", c.fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
