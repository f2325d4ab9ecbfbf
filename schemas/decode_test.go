package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

func sampleRequest() RequestEvent {
	return RequestEvent{
		RequestID: "req-1",
		SessionID: "sess-1",
		Model:     "Qwen/Qwen3-8B",
		TokenIDs:  []uint32{0, 2, 300, 70000, math.MaxUint32},
		Headers: map[string]string{
			"x-dynamo-experimental-wakeup":        "1",
			"x-dynamo-experimental-sim-tool-call": "search",
		},
		LoraName:     "lora-a",
		CacheSalt:    "salt",
		ReceivedAtMs: 1700000000123,
	}
}

const sampleRequestJSON = `{"request_id":"req-1","session_id":"sess-1","model":"Qwen/Qwen3-8B",
 "token_ids":[0,2,300,70000,4294967295],
 "headers":{"x-dynamo-experimental-wakeup":"1","x-dynamo-experimental-sim-tool-call":"search"},
 "lora_name":"lora-a","cache_salt":"salt","received_at_ms":1700000000123,"unknown":[1,{"a":null}]}`

// handRequest builds the sample request with msgp's primitive appenders in
// an order unlike the generated encoder, using the narrowest (and signed)
// integer encodings a Python peer may pick, and an unknown key to skip. It
// proves the wire field names independently of the generated code.
func handRequest() []byte {
	b := msgp.AppendMapHeader(nil, 9)
	b = msgp.AppendString(b, "headers")
	b = msgp.AppendMapHeader(b, 2)
	b = msgp.AppendString(b, "x-dynamo-experimental-sim-tool-call")
	b = msgp.AppendString(b, "search")
	b = msgp.AppendString(b, "x-dynamo-experimental-wakeup")
	b = msgp.AppendString(b, "1")
	b = msgp.AppendString(b, "token_ids")
	b = msgp.AppendArrayHeader(b, 5)
	b = msgp.AppendInt64(b, 0) // positive fixint via the signed appender
	b = msgp.AppendInt8(b, 2)
	b = msgp.AppendInt16(b, 300) // int16 on the wire
	b = msgp.AppendUint32(b, 70000)
	b = msgp.AppendUint64(b, math.MaxUint32)
	b = msgp.AppendString(b, "extra")
	b = msgp.AppendArrayHeader(b, 2)
	b = msgp.AppendNil(b)
	b = msgp.AppendMapHeader(b, 0)
	b = msgp.AppendString(b, "request_id")
	b = msgp.AppendString(b, "req-1")
	b = msgp.AppendString(b, "session_id")
	b = msgp.AppendString(b, "sess-1")
	b = msgp.AppendString(b, "model")
	b = msgp.AppendString(b, "Qwen/Qwen3-8B")
	b = msgp.AppendString(b, "lora_name")
	b = msgp.AppendString(b, "lora-a")
	b = msgp.AppendString(b, "cache_salt")
	b = msgp.AppendString(b, "salt")
	b = msgp.AppendString(b, "received_at_ms")
	b = msgp.AppendUint64(b, 1700000000123) // unsigned on the wire, int64 field
	return b
}

// mapMsg builds a msgpack map from alternating keys and value appenders.
func mapMsg(kv ...any) []byte {
	b := msgp.AppendMapHeader(nil, uint32(len(kv)/2))
	for i := 0; i < len(kv); i += 2 {
		b = msgp.AppendString(b, kv[i].(string))
		switch v := kv[i+1].(type) {
		case string:
			b = msgp.AppendString(b, v)
		case func([]byte) []byte:
			b = v(b)
		default:
			panic(fmt.Sprintf("mapMsg: unsupported %T", v))
		}
	}
	return b
}

func tokens(ids ...int64) func([]byte) []byte {
	return func(b []byte) []byte {
		b = msgp.AppendArrayHeader(b, uint32(len(ids)))
		for _, id := range ids {
			b = msgp.AppendInt64(b, id)
		}
		return b
	}
}

func raw(p ...byte) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, p...) }
}

func TestDecodeRequestFormatsAgree(t *testing.T) {
	want := sampleRequest()
	gen, err := want.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ct string
		data     []byte
	}{
		{"json sniffed", "", []byte(sampleRequestJSON)},
		{"json header", "application/json; charset=utf-8", []byte(sampleRequestJSON)},
		{"json leading blanks", "", []byte(" \r\n\t" + sampleRequestJSON)},
		{"generated msgpack sniffed", "", gen},
		{"generated msgpack header", "application/msgpack", gen},
		{"hand msgpack sniffed", "", handRequest()},
		{"hand msgpack x-msgpack", "application/x-msgpack", handRequest()},
		{"hand msgpack leading blanks", "", append([]byte("\n \t\r"), handRequest()...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Limits{}.DecodeRequest(c.data, c.ct)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("got %+v\nwant %+v", *got, want)
			}
		})
	}
	// The package-level helper uses the default limits.
	if got, err := DecodeRequest(gen, ""); err != nil || got.RequestID != "req-1" {
		t.Fatalf("DecodeRequest = %+v, %v", got, err)
	}
}

func TestDetectFormat(t *testing.T) {
	msg := handRequest()
	cases := []struct {
		name, ct string
		data     []byte
		want     Format
		ok       bool
	}{
		{"json brace", "", []byte(`{"a":1}`), FormatJSON, true},
		{"json after blanks", "", []byte(" \t\r\n{}"), FormatJSON, true},
		{"fixmap 0x80", "", []byte{0x80}, FormatMsgpack, true},
		{"fixmap 0x8f", "", []byte{0x8f}, FormatMsgpack, true},
		{"map16 0xde", "", []byte{0xde, 0, 0}, FormatMsgpack, true},
		{"map32 0xdf", "", []byte{0xdf, 0, 0, 0, 0}, FormatMsgpack, true},
		{"msgpack after blanks", "", append([]byte("\n "), msg...), FormatMsgpack, true},
		{"fixarray is neither", "", []byte{0x90}, 0, false},
		{"json array is neither", "", []byte(`[1]`), 0, false},
		{"empty", "", nil, 0, false},
		{"only blanks", "", []byte(" \n"), 0, false},
		{"text", "", []byte("hello"), 0, false},
		// The Content-Type header wins over the first byte.
		{"json header on msgpack", "Application/JSON", msg, FormatJSON, true},
		{"msgpack header on json", "application/vnd.msgpack", []byte(`{}`), FormatMsgpack, true},
		{"msgpack header on empty", "application/msgpack", nil, FormatMsgpack, true},
		{"unrelated header sniffs", "text/plain", []byte(`{}`), FormatJSON, true},
	}
	for _, c := range cases {
		f, ok := DetectFormat(c.ct, c.data)
		if f != c.want || ok != c.ok {
			t.Errorf("%s: DetectFormat = %v,%v want %v,%v", c.name, f, ok, c.want, c.ok)
		}
	}
	if FormatJSON.String() != "json" || FormatMsgpack.String() != "msgpack" || Format(0).String() != "unknown" {
		t.Error("Format.String names changed")
	}
}

func TestContentTypeWinsOverSniffing(t *testing.T) {
	// msgpack bytes declared as JSON are decoded as JSON, and fail.
	_, err := Limits{}.DecodeRequest(handRequest(), "application/json")
	wantDecodeError(t, err, "request", "invalid UTF-8")
	// JSON bytes declared as msgpack are decoded as msgpack: '{' is a
	// positive fixint, not a map.
	_, err = Limits{}.DecodeRequest([]byte(sampleRequestJSON), "application/msgpack")
	wantDecodeError(t, err, "request", "wrong msgpack type")
}

type reqCase struct {
	name   string
	lim    Limits
	ct     string
	data   []byte
	reason string // exact; or a prefix when it ends in "..."
}

func checkReason(t *testing.T, de *DecodeError, want string) {
	t.Helper()
	if p, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(de.Reason, p) {
			t.Errorf("Reason = %q, want prefix %q", de.Reason, p)
		}
		return
	}
	if de.Reason != want {
		t.Errorf("Reason = %q, want %q (err %v)", de.Reason, want, de)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	full := handRequest()
	deep := bytes.Repeat([]byte("["), 100_000)
	cases := []reqCase{
		{name: "json missing request_id", data: []byte(`{"session_id":"s"}`), reason: "missing request_id"},
		{name: "json empty request_id", data: []byte(`{"request_id":""}`), reason: "missing request_id"},
		{name: "json null object", ct: "application/json", data: []byte(`null`), reason: "missing request_id"},
		{name: "msgpack missing request_id", data: mapMsg("model", "m"), reason: "missing request_id"},
		{name: "msgpack empty map", data: []byte{0x80}, reason: "missing request_id"},
		{name: "msgpack truncated", data: full[:len(full)-3], reason: "truncated msgpack"},
		{name: "msgpack map header only", data: []byte{0xde, 0x00}, reason: "truncated msgpack"},
		{name: "json token_ids string", data: []byte(`{"request_id":"a","token_ids":"1,2"}`), reason: "wrong type for token_ids"},
		{name: "json request_id int", data: []byte(`{"request_id":5}`), reason: "wrong type for request_id"},
		{name: "json negative token", data: []byte(`{"request_id":"a","token_ids":[-1]}`), reason: "wrong type for token_ids..."},
		{name: "json token 2^32", data: []byte(`{"request_id":"a","token_ids":[4294967296]}`), reason: "wrong type for token_ids..."},
		{name: "json header value int", data: []byte(`{"request_id":"a","headers":{"x":1}}`), reason: "wrong type for headers..."},
		{name: "msgpack token_ids string", data: mapMsg("request_id", "a", "token_ids", "1,2"), reason: "wrong msgpack type"},
		{name: "msgpack request_id int", data: mapMsg("request_id", raw(0x05)), reason: "wrong msgpack type"},
		{name: "msgpack request_id bin", data: mapMsg("request_id", func(b []byte) []byte { return msgp.AppendBytes(b, []byte("a")) }), reason: "wrong msgpack type"},
		{name: "msgpack request_id nil", data: mapMsg("request_id", raw(0xc0)), reason: "wrong msgpack type"},
		{name: "msgpack negative token fixint", data: mapMsg("request_id", "a", "token_ids", tokens(1, -1)), reason: "negative number"},
		{name: "msgpack negative token int16", data: mapMsg("request_id", "a", "token_ids", tokens(-300)), reason: "negative number"},
		{name: "msgpack token 2^32", data: mapMsg("request_id", "a", "token_ids", tokens(1<<32)), reason: "number overflows its field"},
		{name: "msgpack received_at_ms above int64", data: mapMsg("request_id", "a", "received_at_ms", func(b []byte) []byte { return msgp.AppendUint64(b, math.MaxUint64) }), reason: "number overflows its field"},
		{name: "json invalid UTF-8", data: []byte("{\"request_id\":\"a\xffb\"}"), reason: "invalid UTF-8"},
		{name: "msgpack invalid UTF-8 request_id", data: mapMsg("request_id", "a\xffb"), reason: "invalid UTF-8"},
		{name: "msgpack invalid UTF-8 header key", data: mapMsg("request_id", "a", "headers", func(b []byte) []byte {
			b = msgp.AppendMapHeader(b, 1)
			return msgp.AppendString(msgp.AppendString(b, "x-\xc3"), "v")
		}), reason: "invalid UTF-8"},
		{name: "msgpack invalid UTF-8 cache_salt", data: mapMsg("request_id", "a", "cache_salt", "\xed\xa0\x80"), reason: "invalid UTF-8"},
		{name: "json too many tokens", lim: Limits{MaxTokens: 10}, data: []byte(`{"request_id":"a","token_ids":[0,1,2,3,4,5,6,7,8,9,10]}`), reason: "too many token_ids"},
		{name: "msgpack too many tokens", lim: Limits{MaxTokens: 10}, data: mapMsg("request_id", "a", "token_ids", tokens(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)), reason: "too many token_ids"},
		{name: "too many headers", lim: Limits{MaxHeaders: 1}, data: []byte(`{"request_id":"a","headers":{"a":"1","b":"2"}}`), reason: "too many headers"},
		{name: "string too long", lim: Limits{MaxString: 4}, data: []byte(`{"request_id":"12345"}`), reason: "string too long"},
		{name: "header value too long", lim: Limits{MaxString: 4}, data: []byte(`{"request_id":"a","headers":{"k":"12345"}}`), reason: "string too long"},
		{name: "json too large", lim: Limits{MaxBytes: 32}, data: []byte(sampleRequestJSON), reason: "message too large"},
		{name: "msgpack too large", lim: Limits{MaxBytes: 32}, data: full, reason: "message too large"},
		{name: "deep json declared", ct: "application/json", data: deep, reason: "JSON nested too deeply"},
		{name: "deep json sniffed", data: deep, reason: "neither JSON nor a msgpack map"},
		{name: "deep json in object", data: append([]byte(`{"request_id":"a","x":`), deep...), reason: "JSON nested too deeply"},
		{name: "json trailing garbage", data: []byte(`{"request_id":"a"} x`), reason: "invalid JSON"},
		{name: "json two objects", data: []byte(`{"request_id":"a"}{"request_id":"b"}`), reason: "invalid JSON"},
		{name: "msgpack trailing bytes", data: append(bytes.Clone(full), 0xc0), reason: "trailing bytes after msgpack"},
		{name: "msgpack two maps", data: append(bytes.Clone(full), full...), reason: "trailing bytes after msgpack"},
		{name: "msgpack array header 2^31", data: mapMsg("request_id", "a", "token_ids", raw(0xdd, 0x80, 0, 0, 0, 1, 2)), reason: "too many token_ids"},
		{name: "msgpack map header 2^31", data: []byte{0xdf, 0x80, 0, 0, 0, 0xa1, 'a'}, reason: "msgpack array or map too large"},
		{name: "msgpack headers map 65535", data: mapMsg("request_id", "a", "headers", raw(0xde, 0xff, 0xff)), reason: "too many headers"},
		{name: "msgpack invalid prefix", data: mapMsg("request_id", "a", "extra", raw(0xc1)), reason: "invalid msgpack"},
		{name: "msgpack key not a string", data: []byte{0x81, 0x01, 0x01}, reason: "wrong msgpack type"},
		{name: "empty", data: nil, reason: "neither JSON nor a msgpack map"},
		{name: "text", data: []byte("hello"), reason: "neither JSON nor a msgpack map"},
		{name: "msgpack array top level", data: []byte{0x91, 0xa1, 'a'}, reason: "neither JSON nor a msgpack map"},
		{name: "declared msgpack empty", ct: "application/msgpack", data: nil, reason: "truncated msgpack"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := c.lim.DecodeRequest(c.data, c.ct)
			if ev != nil {
				t.Errorf("got event %+v with error %v", ev, err)
			}
			checkReason(t, wantDecodeError(t, err, "request", ""), c.reason)
		})
	}
}

func TestDecodeRequestAtLimits(t *testing.T) {
	lim := Limits{MaxTokens: 10, MaxHeaders: 2, MaxString: 5}
	ev, err := lim.DecodeRequest([]byte(`{"request_id":"12345","token_ids":[0,1,2,3,4,5,6,7,8,9],"headers":{"a":"b","c":"d"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.TokenIDs) != 10 || len(ev.Headers) != 2 {
		t.Fatalf("got %+v", ev)
	}
	msg := mapMsg("request_id", "12345", "token_ids", tokens(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	lim.MaxBytes = len(msg)
	if _, err := lim.DecodeRequest(msg, ""); err != nil {
		t.Fatalf("message of exactly MaxBytes: %v", err)
	}
}

// Every proper prefix of a valid msgpack request is reported as truncated.
func TestDecodeRequestEveryTruncation(t *testing.T) {
	full := handRequest()
	for n := 1; n < len(full); n++ {
		_, err := Limits{}.DecodeRequest(full[:n], "")
		de := wantDecodeError(t, err, "request", "")
		if de.Reason != "truncated msgpack" {
			t.Fatalf("prefix %d/%d: reason %q (%v)", n, len(full), de.Reason, err)
		}
	}
}

// msgp wraps its errors with context (WrapError); the reasons must see
// through that wrapping and through further %w wrapping.
func TestMsgpReasonUnwraps(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{msgp.ErrShortBytes, "truncated msgpack"},
		{msgp.WrapError(msgp.ErrShortBytes, "TokenIDs", 3), "truncated msgpack"},
		{msgp.WrapError(msgp.ErrLimitExceeded, "Headers"), "msgpack array or map too large"},
		{msgp.WrapError(msgp.TypeError{Method: msgp.StrType, Encoded: msgp.IntType}, "RequestID"), "wrong msgpack type"},
		{msgp.WrapError(msgp.UintBelowZero{Value: -1}, "TokenIDs", 0), "negative number"},
		{msgp.WrapError(msgp.IntOverflow{Value: 1 << 40, FailedBitsize: 32}, "X"), "number overflows its field"},
		{msgp.WrapError(msgp.UintOverflow{Value: 1 << 40, FailedBitsize: 32}, "TokenIDs", 1), "number overflows its field"},
		{fmt.Errorf("outer: %w", msgp.WrapError(msgp.UintBelowZero{Value: -2}, "A", "B")), "negative number"},
		{msgp.WrapError(msgp.InvalidPrefixError(0xc1)), "invalid msgpack"},
		{msgp.ErrRecursion, "invalid msgpack"},
		{errors.New("other"), "invalid msgpack"},
	}
	for _, c := range cases {
		if got := msgpReason(c.err); got != c.want {
			t.Errorf("msgpReason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// heapAllocated returns the bytes allocated while f runs. The tests using
// it do not run in parallel, so other goroutines add little noise.
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A header claiming a huge array or map in a tiny message must fail
// without allocating for the claimed elements: the allocation would be
// the attack, whatever the error.
func TestDecodeHugeHeadersDoNotAllocate(t *testing.T) {
	const budget = 1 << 20
	hdr32 := func(lead byte, n uint32) func([]byte) []byte {
		return raw(lead, byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0x01, 0x02)
	}
	cases := []struct {
		name   string
		decode func() error
	}{
		{"request token_ids 2^31", func() error {
			_, err := Limits{}.DecodeRequest(mapMsg("request_id", "a", "token_ids", hdr32(0xdd, 1<<31)), "")
			return err
		}},
		{"request token_ids at msgp limit", func() error {
			_, err := Limits{}.DecodeRequest(mapMsg("request_id", "a", "token_ids", hdr32(0xdd, MaxArrayElems)), "")
			return err
		}},
		{"request headers at msgp limit", func() error {
			_, err := Limits{}.DecodeRequest(mapMsg("request_id", "a", "headers", hdr32(0xdf, MaxMapEntries)), "")
			return err
		}},
		{"response tool_calls 2^31", func() error {
			_, err := Limits{}.DecodeResponse(mapMsg("request_id", "a", "tool_calls", hdr32(0xdd, 1<<31)), "")
			return err
		}},
		{"response tool_calls at msgp limit", func() error {
			_, err := Limits{}.DecodeResponse(mapMsg("request_id", "a", "tool_calls", hdr32(0xdd, MaxArrayElems)), "")
			return err
		}},
		{"response output_token_ids at msgp limit", func() error {
			_, err := Limits{}.DecodeResponse(mapMsg("request_id", "a", "output_token_ids", hdr32(0xdd, MaxArrayElems)), "")
			return err
		}},
		{"response nested tool call map at limit", func() error {
			_, err := Limits{}.DecodeResponse(mapMsg("request_id", "a", "tool_calls", raw(0x91, 0xdf, 0, 0, 0x10, 0)), "")
			return err
		}},
		{"top-level map 2^32-1", func() error {
			_, err := Limits{}.DecodeRequest([]byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'a'}, "")
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := heapAllocated(func() { err = c.decode() })
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if n > budget {
				t.Fatalf("allocated %d bytes decoding a tiny message (budget %d)", n, budget)
			}
		})
	}
}

func sampleResponse() ResponseEvent {
	return ResponseEvent{
		RequestID:      "req-1",
		SessionID:      "sess-1",
		Model:          "Qwen/Qwen3-8B",
		WorkerID:       1 << 40,
		DpRank:         3,
		FinishReason:   "tool_calls",
		ToolCalls:      []ToolCall{{Name: "search"}, {Name: "get_weather"}},
		OutputTokenIDs: []uint32{7, 8, 151645},
		CompletedAtMs:  1700000000999,
	}
}

const sampleResponseJSON = `{"request_id":"req-1","session_id":"sess-1","model":"Qwen/Qwen3-8B",
 "worker_id":1099511627776,"dp_rank":3,"finish_reason":"tool_calls",
 "tool_calls":[{"name":"search","arguments":"{}"},{"name":"get_weather"}],
 "output_token_ids":[7,8,151645],"completed_at_ms":1700000000999}`

func handResponse() []byte {
	return mapMsg(
		"tool_calls", func(b []byte) []byte {
			b = msgp.AppendArrayHeader(b, 2)
			b = msgp.AppendMapHeader(b, 2)
			b = msgp.AppendString(b, "arguments")
			b = msgp.AppendString(b, "{}")
			b = msgp.AppendString(b, "name")
			b = msgp.AppendString(b, "search")
			b = msgp.AppendMapHeader(b, 1)
			b = msgp.AppendString(b, "name")
			return msgp.AppendString(b, "get_weather")
		},
		"output_token_ids", tokens(7, 8, 151645),
		"request_id", "req-1",
		"session_id", "sess-1",
		"model", "Qwen/Qwen3-8B",
		"worker_id", func(b []byte) []byte { return msgp.AppendInt64(b, 1<<40) },
		"dp_rank", func(b []byte) []byte { return msgp.AppendUint8(b, 3) },
		"finish_reason", "tool_calls",
		"completed_at_ms", func(b []byte) []byte { return msgp.AppendInt64(b, 1700000000999) },
	)
}

func TestDecodeResponseFormatsAgree(t *testing.T) {
	want := sampleResponse()
	gen, err := want.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"json": []byte(sampleResponseJSON), "generated msgpack": gen, "hand msgpack": handResponse(),
	} {
		got, err := Limits{}.DecodeResponse(data, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("%s: got %+v\nwant %+v", name, *got, want)
		}
	}
	if got, err := DecodeResponse(gen, "application/msgpack"); err != nil || got.FinishReason != "tool_calls" {
		t.Fatalf("DecodeResponse = %+v, %v", got, err)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	full := handResponse()
	cases := []reqCase{
		{name: "json missing request_id", data: []byte(`{"finish_reason":"stop"}`), reason: "missing request_id"},
		{name: "msgpack missing request_id", data: mapMsg("finish_reason", "stop"), reason: "missing request_id"},
		{name: "msgpack truncated", data: full[:len(full)-1], reason: "truncated msgpack"},
		{name: "json tool_calls string", data: []byte(`{"request_id":"a","tool_calls":"search"}`), reason: "wrong type for tool_calls"},
		{name: "json tool call name int", data: []byte(`{"request_id":"a","tool_calls":[{"name":1}]}`), reason: "wrong type for tool_calls..."},
		{name: "json worker_id negative", data: []byte(`{"request_id":"a","worker_id":-1}`), reason: "wrong type for worker_id"},
		{name: "msgpack tool call not a map", data: mapMsg("request_id", "a", "tool_calls", raw(0x91, 0xa1, 'x')), reason: "wrong msgpack type"},
		{name: "msgpack worker_id negative", data: mapMsg("request_id", "a", "worker_id", raw(0xff)), reason: "negative number"},
		{name: "msgpack dp_rank 2^32", data: mapMsg("request_id", "a", "dp_rank", func(b []byte) []byte { return msgp.AppendUint64(b, 1<<32) }), reason: "number overflows its field"},
		{name: "msgpack invalid UTF-8 tool name", data: mapMsg("request_id", "a", "tool_calls", func(b []byte) []byte {
			b = msgp.AppendArrayHeader(b, 1)
			b = msgp.AppendMapHeader(b, 1)
			return msgp.AppendString(msgp.AppendString(b, "name"), "\xfe")
		}), reason: "invalid UTF-8"},
		{name: "json invalid UTF-8", data: []byte("{\"request_id\":\"a\",\"finish_reason\":\"\xc0\xaf\"}"), reason: "invalid UTF-8"},
		{name: "too many output tokens", lim: Limits{MaxTokens: 10}, data: mapMsg("request_id", "a", "output_token_ids", tokens(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)), reason: "too many output_token_ids"},
		{name: "tool name too long", lim: Limits{MaxString: 3}, data: []byte(`{"request_id":"a","tool_calls":[{"name":"search"}]}`), reason: "string too long"},
		{name: "too large", lim: Limits{MaxBytes: 10}, data: full, reason: "message too large"},
		{name: "msgpack trailing", data: append(bytes.Clone(full), 0x00), reason: "trailing bytes after msgpack"},
		{name: "tool_calls 2^31", data: mapMsg("request_id", "a", "tool_calls", raw(0xdd, 0x80, 0, 0, 0)), reason: "msgpack array or map too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := c.lim.DecodeResponse(c.data, c.ct)
			if ev != nil {
				t.Errorf("got event %+v with error %v", ev, err)
			}
			checkReason(t, wantDecodeError(t, err, "response", ""), c.reason)
		})
	}
}

func u64(v uint64) *uint64 { return &v }

func TestDecodeLoad(t *testing.T) {
	all := ActiveLoad{WorkerID: 7, DpRank: 1, ActiveDecodeBlocks: u64(12), ActivePrefillTokens: u64(0), KvUsedBlocks: u64(1 << 40)}
	none := ActiveLoad{WorkerID: 7, DpRank: 1}
	genAll, err := all.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	genNone, err := none.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	nilv := raw(0xc0)
	cases := []struct {
		name string
		data []byte
		want ActiveLoad
	}{
		{"json all", []byte(`{"worker_id":7,"dp_rank":1,"active_decode_blocks":12,"active_prefill_tokens":0,"kv_used_blocks":1099511627776}`), all},
		{"json nulls", []byte(`{"worker_id":7,"dp_rank":1,"active_decode_blocks":null,"active_prefill_tokens":null,"kv_used_blocks":null}`), none},
		{"json absent", []byte(`{"worker_id":7,"dp_rank":1}`), none},
		{"generated msgpack all", genAll, all},
		{"generated msgpack nils", genNone, none},
		{"hand msgpack nils", mapMsg("kv_used_blocks", nilv, "active_decode_blocks", nilv, "active_prefill_tokens", nilv,
			"worker_id", raw(0x07), "dp_rank", raw(0x01)), none},
		{"hand msgpack absent", mapMsg("worker_id", raw(0x07), "dp_rank", raw(0x01)), none},
		{"hand msgpack values", mapMsg("worker_id", raw(0x07), "dp_rank", raw(0xcc, 0x01), "active_decode_blocks", raw(0x0c),
			"active_prefill_tokens", raw(0xd0, 0x00), "kv_used_blocks", func(b []byte) []byte { return msgp.AppendUint64(b, 1<<40) }), all},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Limits{}.DecodeLoad(c.data, "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Fatalf("got %s\nwant %s", loadString(got), loadString(&c.want))
			}
			if got.DecodeBlocks() != deref(c.want.ActiveDecodeBlocks) ||
				got.PrefillTokens() != deref(c.want.ActivePrefillTokens) ||
				got.UsedBlocks() != deref(c.want.KvUsedBlocks) {
				t.Fatalf("accessors disagree with fields: %s", loadString(got))
			}
		})
	}
	var zero ActiveLoad
	if zero.DecodeBlocks() != 0 || zero.PrefillTokens() != 0 || zero.UsedBlocks() != 0 {
		t.Fatal("accessors of unreported counters must be 0")
	}
	if all.UsedBlocks() != 1<<40 || all.DecodeBlocks() != 12 {
		t.Fatal("accessors must return reported counters")
	}
}

func loadString(l *ActiveLoad) string {
	p := func(v *uint64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{worker %d rank %d decode %s prefill %s used %s}", l.WorkerID, l.DpRank,
		p(l.ActiveDecodeBlocks), p(l.ActivePrefillTokens), p(l.KvUsedBlocks))
}

func TestDecodeLoadErrors(t *testing.T) {
	cases := []reqCase{
		{name: "json string counter", data: []byte(`{"worker_id":7,"kv_used_blocks":"3"}`), reason: "wrong type for kv_used_blocks"},
		{name: "json negative counter", data: []byte(`{"worker_id":7,"active_decode_blocks":-3}`), reason: "wrong type for active_decode_blocks"},
		{name: "msgpack negative counter", data: mapMsg("kv_used_blocks", raw(0xd0, 0x80)), reason: "negative number"},
		{name: "msgpack string counter", data: mapMsg("kv_used_blocks", "3"), reason: "wrong msgpack type"},
		{name: "msgpack dp_rank overflow", data: mapMsg("dp_rank", func(b []byte) []byte { return msgp.AppendUint64(b, 1<<33) }), reason: "number overflows its field"},
		{name: "msgpack truncated", data: mapMsg("worker_id", raw(0xcf, 0, 0)), reason: "truncated msgpack"},
		{name: "msgpack trailing", data: append(mapMsg("worker_id", raw(0x01)), 0x01), reason: "trailing bytes after msgpack"},
		{name: "json invalid UTF-8", data: []byte("{\"x\":\"\xff\"}"), reason: "invalid UTF-8"},
		{name: "too large", lim: Limits{MaxBytes: 4}, data: []byte(`{"worker_id":7}`), reason: "message too large"},
		{name: "neither", data: []byte("7"), reason: "neither JSON nor a msgpack map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := c.lim.DecodeLoad(c.data, c.ct)
			if ev != nil {
				t.Errorf("got %+v with error %v", ev, err)
			}
			checkReason(t, wantDecodeError(t, err, "load", ""), c.reason)
		})
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := Limits{}.DecodeRequest(mapMsg("request_id", "a", "token_ids", tokens(-1)), "")
	de := wantDecodeError(t, err, "request", "negative number")
	if de.Err == nil || !strings.HasPrefix(err.Error(), "request: negative number: ") {
		t.Fatalf("error text %q should carry kind, reason and codec error", err)
	}
	var ue msgp.UintBelowZero
	if !errors.As(err, &ue) || ue.Value != -1 {
		t.Fatalf("codec error not reachable through Unwrap: %v", err)
	}
	_, err = Limits{}.DecodeRequest([]byte(`{}`), "")
	if err.Error() != "request: missing request_id" {
		t.Fatalf("error text %q", err)
	}
}

// BenchmarkDecodeRequest measures a typical agentic prompt (32k tokens),
// including the checkMsgpack pre-pass on the msgpack path.
func BenchmarkDecodeRequest(b *testing.B) {
	ev := sampleRequest()
	ev.TokenIDs = make([]uint32, 32<<10)
	for i := range ev.TokenIDs {
		ev.TokenIDs[i] = uint32(i * 37 % 151000)
	}
	msg, err := ev.MarshalMsg(nil)
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(&ev)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"msgpack", msg}, {"json", js}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, err := DecodeRequest(c.data, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("checkMsgpack", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			if err := checkMsgpack(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestCheckMsgpack(t *testing.T) {
	ok := [][]byte{
		handRequest(), handResponse(), {0xc0}, {0x80}, {0x90},
		{0x92, 0xcc, 0xff, 0xd3, 1, 2, 3, 4, 5, 6, 7, 8},
		{0x81, 0xa1, 'a', 0xc7, 0x02, 0x05, 'x', 'y'}, // ext8
		{0x91, 0x91, 0x91, 0x80, 0xff},                // trailing byte is left for the caller
	}
	for _, b := range ok {
		if err := checkMsgpack(b); err != nil {
			t.Errorf("checkMsgpack(%x) = %v", b, err)
		}
	}
	bad := []struct {
		b    []byte
		want error
	}{
		{nil, msgp.ErrShortBytes},
		{[]byte{0x92, 0x01}, msgp.ErrShortBytes},                         // 2 elements, 1 byte
		{[]byte{0xdd, 0x00, 0x01, 0x00, 0x00, 0x01}, msgp.ErrShortBytes}, // 65536 claimed
		{[]byte{0xdd, 0x7f, 0xff, 0xff, 0xff}, msgp.ErrLimitExceeded},
		{[]byte{0xde, 0x10, 0x01}, msgp.ErrLimitExceeded},
		{[]byte{0x81, 0x01}, msgp.ErrShortBytes},       // a key without its value
		{[]byte{0xcf, 0x00, 0x01}, msgp.ErrShortBytes}, // uint64 cut short
		{[]byte{0xd9, 0x05, 'a'}, msgp.ErrShortBytes},  // str8 cut short
	}
	for _, c := range bad {
		if err := checkMsgpack(c.b); !errors.Is(err, c.want) {
			t.Errorf("checkMsgpack(%x) = %v, want %v", c.b, err, c.want)
		}
	}
	var ip msgp.InvalidPrefixError
	if err := checkMsgpack([]byte{0x91, 0xc1}); !errors.As(err, &ip) {
		t.Errorf("invalid prefix: %v", err)
	}
}

// usedRequest is an event as DecodeRequestInto finds it after a decode:
// every field set, 2,048 token ids.
func usedRequest() *RequestEvent {
	ev := sampleRequest()
	ev.TokenIDs = make([]uint32, 2048)
	for i := range ev.TokenIDs {
		ev.TokenIDs[i] = uint32(i * 7)
	}
	return &ev
}

// DecodeRequestInto reads a prompt into the memory of the one before it,
// in both formats, and answers as DecodeRequest does.
func TestDecodeRequestIntoReusesTokenMemory(t *testing.T) {
	want := *usedRequest()
	want.RequestID, want.TokenIDs = "req-2", want.TokenIDs[:1500]
	js, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := want.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ct   string
		data []byte
	}{{"application/json", js}, {"application/msgpack", mp}} {
		ev := usedRequest()
		mem := &ev.TokenIDs[0]
		if err := (Limits{}).DecodeRequestInto(ev, c.data, c.ct); err != nil {
			t.Fatal(err)
		}
		if &ev.TokenIDs[0] != mem {
			t.Errorf("%s: token ids in new memory", c.ct)
		}
		if !reflect.DeepEqual(*ev, want) {
			t.Errorf("%s: decoded %+v", c.ct, *ev)
		}
		fresh := testing.AllocsPerRun(20, func() { _, _ = (Limits{}).DecodeRequest(c.data, c.ct) })
		into := testing.AllocsPerRun(20, func() { _ = (Limits{}).DecodeRequestInto(ev, c.data, c.ct) })
		if into > fresh-2 { // the event and its token slice
			t.Errorf("%s: %v allocations into a used event, %v fresh", c.ct, into, fresh)
		}
	}
}

// TestSkipMsgpack: the walk the other decoders share returns the bytes
// after the value, allows exactly maxDepth nested non-empty containers
// (an empty one below them is no deeper), and bounds no length but by
// the bytes.
func TestSkipMsgpack(t *testing.T) {
	nest := func(n int, inner ...byte) []byte { return append(bytes.Repeat([]byte{0x91}, n), inner...) }
	for _, c := range []struct {
		b    []byte
		rest int
		want error
	}{
		{append(nest(3, 0xc0), 0xc3, 0xc2), 2, nil},
		{nest(3, 0x90), 0, nil},
		{nest(4, 0xc0), 0, ErrMsgpackTooDeep},
		{[]byte{0x82, 0xa1, 'a', 0x01}, 0, msgp.ErrShortBytes},
		{[]byte{0xdd, 0x00, 0x40, 0x00, 0x01, 0xc0}, 0, msgp.ErrShortBytes},
		{append([]byte{0xdf, 0, 0, 0x10, 0x01}, bytes.Repeat([]byte{0}, 2*(MaxMapEntries+1))...), 0, nil},
		{[]byte{0x91, 0xc1}, 0, msgp.InvalidPrefixError(0xc1)},
	} {
		rest, err := SkipMsgpack(c.b, 3)
		if !errors.Is(err, c.want) || err == nil && len(rest) != c.rest {
			t.Errorf("SkipMsgpack(%x) = %d bytes left, %v; want %d, %v", c.b, len(rest), err, c.rest, c.want)
		}
	}
}
