package schemas

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sameRouterEvent fails unless the fast and the slow path give the same
// value and the same error for data under l.
func sameRouterEvent(t *testing.T, l Limits, data []byte) {
	t.Helper()
	fast, ferr := l.decodeRouterEvent(data, true)
	slow, serr := l.decodeRouterEvent(data, false)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v, %v\nslow %+v, %v", data, fast, ferr, slow, serr)
	}
}

func TestFastRouterEventJSON(t *testing.T) {
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":1}}`
	}
	cases := []struct {
		name string
		in   string
		fast bool // the fast path takes it
	}{
		{"stored", ev(`{"stored":{"parent_hash":9002,"blocks":[{"block_hash":9003,"tokens_hash":15310707395893867146}]}}`), true},
		{"stored root", ev(`{"stored":{"parent_hash":null,"start_position":32,"blocks":[]}}`), true},
		{"stored start null", ev(`{"stored":{"start_position":null,"blocks":[{}]}}`), true},
		{"stored empty", ev(`{"stored":{}}`), true},
		{"negative hashes", ev(`{"stored":{"parent_hash":-1,"blocks":[{"tokens_hash":-9223372036854775808,"block_hash":-0}]}}`), true},
		{"removed", ev(`{"removed":{"block_hashes":[18446744073709551615,-2]}}`), true},
		{"removed empty", ev(`{"removed":{"block_hashes":[]}}`), true},
		{"removed no hashes", ev(`{"removed":{}}`), true},
		{"cleared", ev(`"cleared"`), true},
		{"cleared null", ev(`{"cleared":null}`), true},
		{"cleared empty", ev(`{ "cleared" : { } }`), true},
		{"tiers", `{"storage_tier":"host_pinned","event":{"data":"cleared"},"worker_id":18446744073709551615}`, true},
		{"empty tier", `{"storage_tier":"","event":{"data":"cleared"}}`, true},
		{"spaces", " \n{ \"worker_id\" : 7 ,\t\"event\" : { \"data\" : { \"removed\" : { \"block_hashes\" : [ 1 , 2 ] } } } }\r\n", true},
		{"no data", `{"worker_id":7,"event":{"event_id":1}}`, false},
		{"no event", `{"worker_id":7}`, false},
		{"unknown tier", `{"storage_tier":"gpu","event":{"data":"cleared"}}`, false},
		{"unknown key", `{"worker_id":7,"x":1,"event":{"data":"cleared"}}`, false},
		{"upstream Dynamo", `{"worker_id":7,"storage_tier":"device","residency_domain":"worker","event":{"event_id":1,"data":{"stored":` +
			`{"parent_hash":null,"start_position":null,"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":null}]}},"dp_rank":0}}`, true},
		{"residency_domain other", `{"residency_domain":"cache_owner","event":{"data":"cleared"}}`, true},
		{"residency_domain not UTF-8", "{\"residency_domain\":\"\xff\",\"event\":{\"data\":\"cleared\"}}", false},
		{"residency_domain null", `{"residency_domain":null,"event":{"data":"cleared"}}`, false},
		{"mm_extra_info set", ev(`{"stored":{"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[]}}]}}`), false},
		{"state_source", `{"state_source":{},"event":{"data":"cleared"}}`, false},
		{"repeated key", `{"worker_id":7,"worker_id":8,"event":{"data":"cleared"}}`, false},
		{"repeated hash", ev(`{"stored":{"blocks":[{"block_hash":1,"block_hash":2}]}}`), false},
		{"case-folded key", `{"Worker_ID":7,"event":{"data":"cleared"}}`, false},
		{"two variants", ev(`{"cleared":null,"removed":{"block_hashes":[]}}`), false},
		{"cleared other", ev(`{"cleared":1}`), false},
		{"escape", ev(`"clear\u0065d"`), false},
		{"worker null", `{"worker_id":null,"event":{"data":"cleared"}}`, false},
		{"worker negative", `{"worker_id":-1,"event":{"data":"cleared"}}`, false},
		{"worker overflow", `{"worker_id":18446744073709551616,"event":{"data":"cleared"}}`, false},
		{"dp_rank overflow", `{"event":{"data":"cleared","dp_rank":4294967296}}`, false},
		{"hash overflow", ev(`{"removed":{"block_hashes":[-9223372036854775809]}}`), false},
		{"hash fraction", ev(`{"removed":{"block_hashes":[1.0]}}`), false},
		{"hash exponent", ev(`{"removed":{"block_hashes":[1e3]}}`), false},
		{"leading zero", ev(`{"removed":{"block_hashes":[01]}}`), false},
		{"trailing comma", ev(`{"removed":{"block_hashes":[1,]}}`), false},
		{"trailing bytes", ev(`"cleared"`) + ` {}`, false},
		{"truncated", ev(`{"removed":{"block_hashes":[1`), false},
		{"blocks null", ev(`{"stored":{"blocks":null}}`), false},
		{"too many blocks", ev(`{"stored":{"blocks":[{},{},{}]}}`), false},
		{"too many hashes", ev(`{"removed":{"block_hashes":[1,2,3]}}`), false},
	}
	lim := Limits{MaxTokens: 2}.withDefaults()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got RouterEvent
			if ok := lim.fastRouterJSON([]byte(c.in), &got); ok != c.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, c.fast)
			}
			sameRouterEvent(t, lim, []byte(c.in))
			if c.fast {
				if _, err := lim.decodeRouterEvent([]byte(c.in), false); err != nil {
					t.Fatalf("fast path accepted what the slow path rejects: %v", err)
				}
			}
		})
	}
}

// TestFastRouterEventJSONVectors: Dynamo's own events all take the fast path.
func TestFastRouterEventJSONVectors(t *testing.T) {
	for i, line := range routerEventLines(t) {
		var ev RouterEvent
		if !(Limits{}).withDefaults().fastRouterJSON(line, &ev) {
			t.Errorf("line %d: fast path declined %s", i+1, line)
		}
		sameRouterEvent(t, Limits{}, line)
	}
}

// TestFastRouterEventJSONLimits: limits the fast path cannot see through
// send the event down the slow path, which names them.
func TestFastRouterEventJSONLimits(t *testing.T) {
	line := routerEventLines(t)[0] // two blocks, nesting 6 deep
	for _, l := range []Limits{{MaxDepth: 5}, {MaxTokens: 1}, {MaxBytes: len(line) - 1}} {
		var ev RouterEvent
		if l.withDefaults().fastRouterJSON(line, &ev) {
			t.Errorf("%+v: fast path took it", l)
		}
		if _, err := l.DecodeRouterEvent(line); err == nil {
			t.Errorf("%+v: accepted", l)
		}
	}
	_, err := Limits{MaxDepth: 5}.DecodeRouterEvent(line)
	wantDecodeError(t, err, "router_event", reasonDeepJSON)
}

// FuzzFastRouterEventJSON: DecodeRouterEvent gives the same value and the
// same error with the fast path as without it, so whatever the fast path
// accepts the slow path accepts with the same value.
func FuzzFastRouterEventJSON(f *testing.F) {
	for _, line := range routerEventLines(f) {
		f.Add(line)
	}
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":1}}`
	}
	f.Add([]byte(ev(`{"cleared":null}`)))
	f.Add([]byte(ev(`{"cleared":{}}`)))
	f.Add([]byte(ev(`{"stored":{"parent_hash":-1,"start_position":32,"blocks":[{"block_hash":-1,"tokens_hash":-9223372036854775808}]}}`)))
	f.Add([]byte(ev(`{"removed":{"block_hashes":[18446744073709551615,0,-2,1,2]}}`)))
	f.Add([]byte(`{"worker_id":1,"storage_tier":"disk","event":{"event_id":0,"data":"cleared"}}`))
	f.Add([]byte(`{"worker_id":7,"storage_tier":"host_pinned","event":{"event_id":6,"data":{"stored":{"parent_hash":null,"start_position":32,` +
		`"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_hashes":[3]}}]}},"dp_rank":0}}`))
	f.Add(benchRouterEvent())
	f.Add([]byte(`{"worker_id":7,"storage_tier":"device","residency_domain":"worker","event":{"event_id":1,"data":"cleared","dp_rank":0}}`))
	small := Limits{MaxTokens: 4, MaxDepth: 6}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameRouterEvent(t, fuzzLimits, data)
		sameRouterEvent(t, small, data)
	})
}

// benchRouterEvent is a 4-block stored event as Dynamo's serde_json
// writes it (fields in declaration order, None as null).
func benchRouterEvent() []byte {
	var blocks []string
	for i := range 4 {
		blocks = append(blocks, fmt.Sprintf(`{"block_hash":%d,"tokens_hash":%d,"mm_extra_info":null}`,
			uint64(1<<63+uint64(i)*0x9e3779b97f4a7c15), uint64(i+1)*0xbf58476d1ce4e5b9))
	}
	return []byte(`{"worker_id":7587890123456789,"storage_tier":"device","residency_domain":"worker","event":{"event_id":1234,` +
		`"data":{"stored":{"parent_hash":15310707395893867146,"start_position":null,"blocks":[` + strings.Join(blocks, ",") +
		`]}},"dp_rank":0}}`)
}

// BenchmarkDecodeRouterEventJSON compares DecodeRouterEvent with and
// without its fast path on a 4-block stored event, in one run:
//
//	go test -run '^$' -bench DecodeRouterEventJSON -benchmem -cpu 1 ./schemas/
func BenchmarkDecodeRouterEventJSON(b *testing.B) {
	data := benchRouterEvent()
	var ev RouterEvent
	if !(Limits{}).withDefaults().fastRouterJSON(data, &ev) || len(ev.Event.Data.Stored.Blocks) != 4 {
		b.Fatalf("fast path declined the bench event: %s", data)
	}
	// into: DecodeRouterEventInto as engine.Engine.KV calls it, each
	// decode reusing the last one's memory: the fast path's CPU alone.
	b.Run("into", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		var ev RouterEvent
		for b.Loop() {
			if err := (Limits{}).DecodeRouterEventInto(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"encoding-json", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Limits{}).decodeRouterEvent(data, c.fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The 8-digit word reader against strconv: every digit in every place,
// and each non-digit byte next to the digits' range in every place.
func TestEightDigits(t *testing.T) {
	word := func(s string) uint64 { return binary.LittleEndian.Uint64([]byte(s)) }
	for _, s := range []string{"00000000", "12345678", "99999999", "10000000", "00000001", "98765432", "09876543"} {
		want, _ := strconv.ParseUint(s, 10, 64)
		if x := word(s); !eightDigits(x) || eightDigitsValue(x) != want {
			t.Errorf("%s: digits %v, value %d", s, eightDigits(x), eightDigitsValue(x))
		}
	}
	for pos := range 8 {
		for _, c := range []byte{'/', ':', '?', ' ', 0, 0xff, 0xb0, 0x39 + 0x80, '-', '.', 'e'} {
			b := []byte("12345678")
			b[pos] = c
			if eightDigits(word(string(b))) {
				t.Errorf("%q taken for eight digits", b)
			}
		}
	}
	// A number split at every place around the 8-digit chunks decodes as
	// strconv does, and 20 digits past 2^64-1 are refused.
	for n := 1; n <= 20; n++ {
		s := strings.Repeat("9", n)
		if n == 20 {
			s = "18446744073709551615"
		}
		p := jsonScan{b: []byte(s + ",")}
		want, _ := strconv.ParseUint(s, 10, 64)
		if v, ok := p.uint64(); !ok || v != want || p.i != n {
			t.Errorf("%s: %d %v at %d", s, v, ok, p.i)
		}
	}
	for _, s := range []string{"18446744073709551616", "99999999999999999999", "0123456789", "123456789012345678901"} {
		p := jsonScan{b: []byte(s)}
		if v, ok := p.uint64(); ok {
			t.Errorf("%s accepted as %d", s, v)
		}
	}
}
