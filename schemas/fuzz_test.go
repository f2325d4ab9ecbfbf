package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"runtime/metrics"
	"testing"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"
)

// Run one with e.g. go test -run='^$' -fuzz='^FuzzDecodeRequest$' -fuzztime=10s ./schemas/
// Interesting inputs found so far are kept in testdata/fuzz/<FuzzName>/.

// fuzzLimits are small so the fuzzer reaches every limit check.
var fuzzLimits = Limits{MaxBytes: 1 << 16, MaxTokens: 64, MaxHeaders: 8, MaxString: 256}

var fuzzContentTypes = []string{"", "application/json", "application/msgpack"}

// allocBudget bounds what decoding data may allocate: proportional to the
// input, never to a length the input merely claims.
func allocBudget(data []byte) uint64 { return 1<<20 + 64*uint64(len(data)) }

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// allocated returns the heap bytes allocated while f runs. Large objects
// are counted at once, which is what the budget is about.
func allocated(f func()) uint64 {
	metrics.Read(allocSample)
	before := allocSample[0].Value.Uint64()
	f()
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64() - before
}

func checkFuzzErr(t *testing.T, err error, kind string) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v does not match ErrMalformed", err)
	}
	var de *DecodeError
	if !errors.As(err, &de) || de.Kind != kind || de.Reason == "" {
		t.Fatalf("error %v: want *DecodeError of kind %q with a reason", err, kind)
	}
}

func checkStrings(t *testing.T, max int, ss ...string) {
	t.Helper()
	for _, s := range ss {
		if !utf8.ValidString(s) || len(s) > max {
			t.Fatalf("accepted string %q (len %d, limit %d)", s, len(s), max)
		}
	}
}

// fuzzSeeds adds each seed with every content-type selector.
func fuzzSeeds(f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		for sel := range fuzzContentTypes {
			f.Add(s, uint8(sel))
		}
	}
}

func mustMsg(tb testing.TB, m msgp.Marshaler) []byte {
	tb.Helper()
	b, err := m.MarshalMsg(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// foreignSeeds are valid messages of other kinds: decoders must reject or
// ignore their fields, never trip on them.
func foreignSeeds(tb testing.TB) [][]byte {
	s := [][]byte{readVector(tb, "kv_hints_envelope.msgpack"), readVector(tb, "engine_batch_map.msgpack")}
	return append(s, routerEventLines(tb)...)
}

func FuzzDecodeRequest(f *testing.F) {
	req := sampleRequest()
	fuzzSeeds(f, []byte(sampleRequestJSON), handRequest(), mustMsg(f, &req),
		[]byte(`{"request_id":"r","token_ids":[1,2,3],"headers":{"x-dynamo-experimental-wakeup":"1"}}`),
		mapMsg("request_id", "r", "token_ids", tokens(1, -1)),
		mapMsg("request_id", "r", "token_ids", raw(0xdd, 0, 0x40, 0, 0, 1)),
		[]byte("\n "+`{"request_id":"\u00e9"}`),
		[]byte(`{"request_id":"r","sequence_hashes":[18446744073709551615,2],"sequence_block_size":16,"sequence_hash_scheme":"unsalted","prompt_tokens":40,"worker_id":7,"dp_rank":1}`))
	fuzzSeeds(f, foreignSeeds(f)...)
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		ct := fuzzContentTypes[int(sel)%len(fuzzContentTypes)]
		// The pre-pass never passes what msgp itself cannot walk.
		if checkMsgpack(data) == nil && len(data) < 100_000 {
			if _, err := msgp.Skip(data); err != nil {
				t.Fatalf("checkMsgpack accepted %x that msgp.Skip rejects: %v", data, err)
			}
		}
		var ev *RequestEvent
		var err error
		if n := allocated(func() { ev, err = fuzzLimits.DecodeRequest(data, ct) }); n > allocBudget(data) {
			t.Fatalf("allocated %d bytes for a %d-byte message", n, len(data))
		}
		// Into an event already used, the same answer: no field of the
		// one before may survive (engine.Engine reuses its events).
		used := usedRequest()
		if intoErr := fuzzLimits.DecodeRequestInto(used, data, ct); (intoErr == nil) != (err == nil) ||
			err != nil && intoErr.Error() != err.Error() {
			t.Fatalf("DecodeRequestInto: %v; DecodeRequest: %v", intoErr, err)
		} else if err == nil && !reflect.DeepEqual(normRequest(*used), normRequest(*ev)) {
			t.Fatalf("DecodeRequestInto %+v, DecodeRequest %+v", *used, *ev)
		}
		if err != nil {
			if ev != nil {
				t.Fatal("event returned with an error")
			}
			checkFuzzErr(t, err, "request")
			return
		}
		if ev.RequestID == "" || len(ev.TokenIDs) > fuzzLimits.MaxTokens || len(ev.Headers) > fuzzLimits.MaxHeaders {
			t.Fatalf("accepted %+v beyond limits", ev)
		}
		checkStrings(t, fuzzLimits.MaxString, ev.RequestID, ev.SessionID, ev.Model, ev.LoraName, ev.CacheSalt)
		for k, v := range ev.Headers {
			checkStrings(t, fuzzLimits.MaxString, k, v)
		}
		// Wider limits accept what narrower ones do, with the same result.
		if wide, err := (Limits{}).DecodeRequest(data, ct); err != nil || !reflect.DeepEqual(wide, ev) {
			t.Fatalf("default limits: %+v, %v; small limits: %+v", wide, err, ev)
		}
		// Both encodings carry the event unchanged.
		want := normRequest(*ev)
		for _, enc := range roundTrips(t, ev) {
			back, err := fuzzLimits.DecodeRequest(enc.data, enc.ct)
			if err != nil {
				t.Fatalf("%s round trip of %+v: %v", enc.ct, ev, err)
			}
			if got := normRequest(*back); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s round trip: %+v != %+v", enc.ct, got, want)
			}
		}
	})
}

type encoded struct {
	ct   string
	data []byte
}

func roundTrips(t *testing.T, v interface {
	msgp.Marshaler
}) []encoded {
	t.Helper()
	m, err := v.MarshalMsg(nil)
	if err != nil {
		t.Fatalf("MarshalMsg: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return []encoded{{"application/msgpack", m}, {"application/json", j}}
}

// normRequest treats empty and absent collections alike: JSON omits empty
// ones and msgpack decodes an empty array to a nil slice.
func normRequest(r RequestEvent) RequestEvent {
	if len(r.TokenIDs) == 0 {
		r.TokenIDs = nil
	}
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	if len(r.SequenceHashes) == 0 {
		r.SequenceHashes = nil // omitempty in msgpack: [] comes back absent
	}
	return r
}

func normResponse(r ResponseEvent) ResponseEvent {
	if len(r.ToolCalls) == 0 {
		r.ToolCalls = nil
	}
	if len(r.OutputTokenIDs) == 0 {
		r.OutputTokenIDs = nil
	}
	if len(r.SequenceHashes) == 0 {
		r.SequenceHashes = nil
	}
	return r
}

func FuzzDecodeResponse(f *testing.F) {
	resp := sampleResponse()
	fuzzSeeds(f, []byte(sampleResponseJSON), handResponse(), mustMsg(f, &resp),
		[]byte(`{"request_id":"r","finish_reason":"tool_calls","tool_calls":[{"name":"t"}]}`),
		mapMsg("request_id", "r", "tool_calls", raw(0x91, 0x80)),
		mapMsg("request_id", "r", "tool_calls", raw(0xdd, 0, 0x40, 0, 0, 0x80)),
		[]byte(`{"request_id":"r","finish_reason":"tool_calls","sequence_hashes":[1,2],"sequence_block_size":16,"lora_name":"a","cache_salt":"s"}`))
	fuzzSeeds(f, foreignSeeds(f)...)
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		ct := fuzzContentTypes[int(sel)%len(fuzzContentTypes)]
		var ev *ResponseEvent
		var err error
		if n := allocated(func() { ev, err = fuzzLimits.DecodeResponse(data, ct) }); n > allocBudget(data) {
			t.Fatalf("allocated %d bytes for a %d-byte message", n, len(data))
		}
		if err != nil {
			if ev != nil {
				t.Fatal("event returned with an error")
			}
			checkFuzzErr(t, err, "response")
			return
		}
		if ev.RequestID == "" || len(ev.OutputTokenIDs) > fuzzLimits.MaxTokens {
			t.Fatalf("accepted %+v beyond limits", ev)
		}
		checkStrings(t, fuzzLimits.MaxString, ev.RequestID, ev.SessionID, ev.Model, ev.FinishReason)
		for _, tc := range ev.ToolCalls {
			checkStrings(t, fuzzLimits.MaxString, tc.Name)
		}
		if wide, err := (Limits{}).DecodeResponse(data, ct); err != nil || !reflect.DeepEqual(wide, ev) {
			t.Fatalf("default limits: %+v, %v; small limits: %+v", wide, err, ev)
		}
		want := normResponse(*ev)
		for _, enc := range roundTrips(t, ev) {
			back, err := Limits{}.DecodeResponse(enc.data, enc.ct)
			if err != nil {
				t.Fatalf("%s round trip of %+v: %v", enc.ct, ev, err)
			}
			if got := normResponse(*back); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s round trip: %+v != %+v", enc.ct, got, want)
			}
		}
	})
}

func FuzzDecodeLoad(f *testing.F) {
	all := ActiveLoad{WorkerID: 7, DpRank: 1, ActiveDecodeBlocks: u64(3), ActivePrefillTokens: u64(0), KvUsedBlocks: u64(1 << 40)}
	fuzzSeeds(f, mustMsg(f, &all), mustMsg(f, &ActiveLoad{WorkerID: 7}),
		[]byte(`{"worker_id":7,"dp_rank":1,"active_decode_blocks":null,"active_prefill_tokens":5,"kv_used_blocks":9}`),
		mapMsg("kv_used_blocks", raw(0xc0), "worker_id", raw(0x07)),
		mapMsg("kv_used_blocks", raw(0xd0, 0x80)))
	fuzzSeeds(f, foreignSeeds(f)...)
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		ct := fuzzContentTypes[int(sel)%len(fuzzContentTypes)]
		var ev *ActiveLoad
		var err error
		if n := allocated(func() { ev, err = fuzzLimits.DecodeLoad(data, ct) }); n > allocBudget(data) {
			t.Fatalf("allocated %d bytes for a %d-byte message", n, len(data))
		}
		if err != nil {
			if ev != nil {
				t.Fatal("event returned with an error")
			}
			checkFuzzErr(t, err, "load")
			return
		}
		// Unreported counters read as zero; reported ones as themselves.
		if ev.DecodeBlocks() != deref(ev.ActiveDecodeBlocks) || ev.UsedBlocks() != deref(ev.KvUsedBlocks) || ev.PrefillTokens() != deref(ev.ActivePrefillTokens) {
			t.Fatalf("accessors disagree with %s", loadString(ev))
		}
		for _, enc := range roundTrips(t, ev) {
			back, err := fuzzLimits.DecodeLoad(enc.data, enc.ct)
			if err != nil {
				t.Fatalf("%s round trip of %s: %v", enc.ct, loadString(ev), err)
			}
			if !reflect.DeepEqual(back, ev) {
				t.Fatalf("%s round trip: %s != %s", enc.ct, loadString(back), loadString(ev))
			}
		}
	})
}

func FuzzDecodeRouterEvent(f *testing.F) {
	for _, l := range routerEventLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"worker_id":7,"storage_tier":"host_pinned","event":{"event_id":9,"data":{"cleared":null},"dp_rank":2}}`))
	f.Add([]byte(`{"worker_id":7,"event":{"event_id":9,"data":{"stored":{"parent_hash":-1,"start_position":3,"blocks":[{"block_hash":-2,"tokens_hash":18446744073709551615,"mm_extra_info":null}]}}}}`))
	f.Add([]byte(`{"worker_id":7,"event":{"event_id":9,"data":{"moved":{}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxTokens: 64}
		var ev *RouterEvent
		var err error
		if n := allocated(func() { ev, err = lim.DecodeRouterEvent(data) }); n > allocBudget(data) {
			t.Fatalf("allocated %d bytes for a %d-byte message", n, len(data))
		}
		if err != nil {
			if ev != nil {
				t.Fatal("event returned with an error")
			}
			checkFuzzErr(t, err, "router_event")
			return
		}
		d := ev.Event.Data
		switch {
		case len(ev.StorageTier) > 64:
			// An unknown tier is accepted (the index counts and ignores
			// it), cut to 64 bytes.
			t.Fatalf("accepted a %d-byte tier", len(ev.StorageTier))
		case d.Kind == KindStored && (d.Stored == nil || d.Removed != nil || len(d.Stored.Blocks) > lim.MaxTokens):
			t.Fatalf("bad stored event %+v", d)
		case d.Kind == KindRemoved && (d.Removed == nil || d.Stored != nil):
			t.Fatalf("bad removed event %+v", d)
		case d.Kind == KindCleared && (d.Stored != nil || d.Removed != nil):
			t.Fatalf("bad cleared event %+v", d)
		case d.Kind != KindStored && d.Kind != KindRemoved && d.Kind != KindCleared:
			t.Fatalf("accepted kind %d", d.Kind)
		}
		enc, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %+v: %v", ev, err)
		}
		back, err := lim.DecodeRouterEvent(enc)
		if err != nil || !reflect.DeepEqual(back, ev) {
			t.Fatalf("round trip via %s: %+v, %v", enc, back, err)
		}
	})
}

func FuzzDecodeWorkerRecord(f *testing.F) {
	f.Add([]byte(`{"worker_id":7,"model":"Qwen/Qwen3-8B","kv_block_size":16,"hint_endpoints":["tcp://10.0.0.7:5570"]}`))
	f.Add([]byte(`{"worker_id":7,"kv_block_size":16,"hint_endpoints":["ipc:///x","http://y"]}`))
	f.Add([]byte(`{"worker_id":7,"kv_block_size":0,"hint_endpoints":[]}`))
	for _, c := range layoutCases(f) {
		f.Add([]byte(`{"worker_id":7,"model":"m","kv_block_size":16,"hint_endpoints":["tcp://h:1"],"object_layout":` + string(c.Layout) + `}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w *WorkerRecord
		var err error
		if n := allocated(func() { w, err = (Limits{}).DecodeWorkerRecord(data) }); n > allocBudget(data) {
			t.Fatalf("allocated %d bytes for a %d-byte message", n, len(data))
		}
		if err != nil {
			if w != nil {
				t.Fatal("record returned with an error")
			}
			checkFuzzErr(t, err, "worker")
			return
		}
		if err := w.Validate(); err != nil || w.KvBlockSize == 0 || len(w.HintEndpoints) == 0 {
			t.Fatalf("accepted invalid record %+v: %v", w, err)
		}
		checkStrings(t, len(data), append([]string{w.Model}, w.HintEndpoints...)...)
		enc, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Limits{}.DecodeWorkerRecord(enc)
		if err != nil || !reflect.DeepEqual(back, w) {
			t.Fatalf("round trip via %s: %+v, %v", enc, back, err)
		}
	})
}

// FuzzEnvelopeUnmarshal exercises the generated envelope decoder that Go
// peers (tests, tools) use on what hintstream sends. It is not behind
// Limits, so it only has to fail cleanly and round-trip.
func FuzzEnvelopeUnmarshal(f *testing.F) {
	f.Add(readVector(f, "kv_hints_envelope.msgpack"))
	p := PrefetchPayload{RequestID: "r", SessionID: "s", Model: "m", TokenIDs: []uint32{1, 2}, DpRank: 1, ExpiresAtMs: 9}
	env := KvHintsEnvelope{ProtocolVersion: ProtocolVersion, MessageID: "m", Actions: []KvHintAction{
		{ActionID: "m/0", ActionType: "kv.prefetch", ActionVersion: "1.0", Payload: mustMsg(f, &p)},
	}}
	f.Add(mustMsg(f, &env))
	f.Add(mustMsg(f, &KvHintsEnvelope{}))
	f.Add(readVector(f, "engine_batch_map.msgpack"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e KvHintsEnvelope
		rest, err := e.UnmarshalMsg(data)
		if err != nil {
			var me msgp.Error
			if !errors.As(err, &me) {
				t.Fatalf("non-msgp error %T: %v", err, err)
			}
			return
		}
		if len(rest) > len(data) || !bytes.Equal(rest, data[len(data)-len(rest):]) {
			t.Fatal("rest is not a suffix of the input")
		}
		for _, a := range e.Actions {
			if len(a.Payload) == 0 {
				continue // absent or nil payload: msgp.Raw keeps nil as empty
			}
			if r, err := msgp.Skip(a.Payload); err != nil || len(r) != 0 {
				t.Fatalf("payload %x is not exactly one msgpack object", []byte(a.Payload))
			}
			var pp PrefetchPayload
			_, _ = pp.UnmarshalMsg(a.Payload) // must not panic, may fail
		}
		enc := mustMsg(t, &e)
		var back KvHintsEnvelope
		if r, err := back.UnmarshalMsg(enc); err != nil || len(r) != 0 {
			t.Fatalf("re-decode: %v (%d bytes left)", err, len(r))
		}
		if len(back.Actions) == 0 && len(e.Actions) == 0 {
			back.Actions, e.Actions = nil, nil
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip %+v != %+v", back, e)
		}
	})
}
