package schemas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFastRequestJSON(t *testing.T) {
	cases := []struct {
		name string
		in   string
		fast bool // the fast path takes it
	}{
		{"full", `{"request_id":"r1","session_id":"s","model":"m","token_ids":[1,2,4294967295],` +
			`"headers":{"x-dynamo-experimental-wakeup":"1","a":""},"lora_name":"l","cache_salt":"c","received_at_ms":-5}`, true},
		{"spaces", " \n{ \"request_id\" : \"r\" , \"token_ids\" : [ 0 , 7 ] , \"headers\" : { } }\t", true},
		{"empty arrays", `{"request_id":"r","token_ids":[],"headers":{}}`, true},
		{"empty object", `{}`, true},
		{"escape", `{"request_id":"r\"1"}`, false},
		{"null", `{"request_id":"r","token_ids":null}`, false},
		{"unknown key", `{"request_id":"r","extra":1}`, false},
		{"case-folded key", `{"Request_ID":"r"}`, false},
		{"repeated key", `{"request_id":"a","request_id":"b"}`, false},
		{"repeated header", `{"request_id":"r","headers":{"a":"1","a":"2"}}`, false},
		{"token too big", `{"request_id":"r","token_ids":[4294967296]}`, false},
		{"negative token", `{"request_id":"r","token_ids":[-1]}`, false},
		{"fraction", `{"request_id":"r","token_ids":[1.0]}`, false},
		{"exponent", `{"request_id":"r","token_ids":[1e3]}`, false},
		{"leading zero", `{"request_id":"r","token_ids":[01]}`, false},
		{"trailing comma", `{"request_id":"r","token_ids":[1,]}`, false},
		{"trailing bytes", `{"request_id":"r"} x`, false},
		{"truncated", `{"request_id":"r","token_ids":[1,2`, false},
		{"string token", `{"request_id":"r","token_ids":["1"]}`, false},
		{"int64 min", `{"request_id":"r","received_at_ms":-9223372036854775808}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got RequestEvent
			ok := fastRequestJSON([]byte(c.in), 1<<20, 256, &got)
			if ok != c.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, c.fast)
			}
			if !ok {
				return
			}
			var want RequestEvent
			if err := json.Unmarshal([]byte(c.in), &want); err != nil {
				t.Fatalf("fast path accepted what encoding/json rejects: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fast %+v\njson %+v", got, want)
			}
		})
	}
}

// TestFastPathFallsBackCleanly: a request the fast path gives up on half
// way is decoded by encoding/json from scratch, with nothing left over.
func TestFastPathFallsBackCleanly(t *testing.T) {
	ev, err := DecodeRequest([]byte(`{"model":"m","token_ids":[1,2],"request_id":"r\u0031"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if ev.RequestID != "r1" || ev.Model != "m" || !reflect.DeepEqual(ev.TokenIDs, []uint32{1, 2}) {
		t.Fatalf("got %+v", ev)
	}
	// Too many tokens: the same reason as without the fast path.
	_, err = Limits{MaxTokens: 2}.DecodeRequest([]byte(`{"request_id":"r","token_ids":[1,2,3]}`), "")
	if err == nil || !strings.Contains(err.Error(), "too many token_ids") {
		t.Fatalf("err %v, want too many token_ids", err)
	}
}

// FuzzFastRequestJSON: whatever the fast path accepts, encoding/json
// accepts with the same value.
func FuzzFastRequestJSON(f *testing.F) {
	f.Add([]byte(`{"request_id":"r1","session_id":"s","model":"m","token_ids":[1,2,3],"headers":{"k":"v"},"received_at_ms":12}`))
	f.Add([]byte(`{"request_id":"r","token_ids":[4294967295,0],"lora_name":"","cache_salt":"x"}`))
	f.Add([]byte(` { "token_ids" : [ ] , "headers" : { } } `))
	f.Add([]byte(`{"request_id":"r","received_at_ms":-9223372036854775807}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		var got RequestEvent
		if !fastRequestJSON(data, 64, 8, &got) {
			return
		}
		var want RequestEvent
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast %+v\njson %+v", data, got, want)
		}
	})
}

func benchRequest() []byte {
	ids := make([]uint32, 2048)
	for i := range ids {
		ids[i] = uint32(i * 7919 % 152064)
	}
	b, _ := json.Marshal(RequestEvent{RequestID: "bench-1", SessionID: "s", Model: "m", TokenIDs: ids,
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
	return b
}

// BenchmarkDecodeRequestJSON compares DecodeRequest (fast path) with
// encoding/json on the same 2,048-token request, in one run:
//
//	go test -run '^$' -bench DecodeRequestJSON -cpu 1 ./schemas/
func BenchmarkDecodeRequestJSON(b *testing.B) {
	data := benchRequest()
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := DecodeRequest(data, "application/json"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var ev RequestEvent
			lim := Limits{}.withDefaults()
			if err := lim.decodeJSON("request", data, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExampleDecodeRequest() {
	ev, err := DecodeRequest([]byte(`{"request_id":"r1","model":"m","token_ids":[1,2,3]}`), "application/json")
	fmt.Println(ev.RequestID, ev.Model, ev.TokenIDs, err)
	// Output: r1 m [1 2 3] <nil>
}
