package consumers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/internal/metricstest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"
)

// hostileLimits are the defaults but for MaxTokens, lowered so that a
// message with more tokens than allowed still fits NATS's 1 MiB payload.
var hostileLimits = schemas.Limits{MaxTokens: 100_000}

// A target is one subject hintstream consumes, with how to tell that a
// valid message after a hostile one was processed.
type target struct {
	kind    string // counter prefix and dead-letter kind
	subject string
	stream  string
	durable string                          // "": an ordered state consumer, which skips instead of terminating
	valid   func(n int) []byte              // a valid message, unique per n
	handled func(h *hostileRig, n int) bool // valid(n) has been processed
}

// mp builds msgpack from Go values: a map from alternating keys and
// values (mpMap), an array (mpArr), raw bytes (mpRaw), a str holding any
// bytes (mpStr), and strings, ints, uint64s, float64s, nil.
type (
	mpMap []any
	mpArr []any
	mpRaw []byte
	mpStr []byte
)

func mp(v any) []byte { return mpAppend(nil, v) }

func mpAppend(b []byte, v any) []byte {
	switch x := v.(type) {
	case mpMap:
		b = msgp.AppendMapHeader(b, uint32(len(x)/2))
		for _, e := range x {
			b = mpAppend(b, e)
		}
		return b
	case mpArr:
		b = msgp.AppendArrayHeader(b, uint32(len(x)))
		for _, e := range x {
			b = mpAppend(b, e)
		}
		return b
	case mpRaw:
		return append(b, x...)
	case mpStr:
		return msgp.AppendStringFromBytes(b, x)
	case string:
		return msgp.AppendString(b, x)
	case int:
		return msgp.AppendInt64(b, int64(x))
	case int64:
		return msgp.AppendInt64(b, x)
	case uint64:
		return msgp.AppendUint64(b, x)
	case float64:
		return msgp.AppendFloat64(b, x)
	case nil:
		return msgp.AppendNil(b)
	}
	panic(fmt.Sprintf("mp: %T", v))
}

// claim10M is an array32 header claiming 10,000,000 elements, followed by
// two of them.
var claim10M = mpRaw{0xdd, 0x00, 0x98, 0x96, 0x80, 0x01, 0x02}

// nestedMsgpack is 100,000 one-element arrays around a nil.
var nestedMsgpack = mpRaw(append(bytes.Repeat([]byte{0x91}, 100_000), 0xc0))

// nestedJSON is 100,000 '[' (never closed: the depth limit comes first).
var nestedJSON = strings.Repeat("[", 100_000)

// zeros is a JSON array of n zeros.
func zeros(n int) string { return "[" + strings.Repeat("0,", n-1) + "0]" }

// manyHeaders is 1,000 small NATS headers (18 KB: JetStream takes them).
func manyHeaders() nats.Header {
	h := nats.Header{}
	for i := range 1_000 {
		h.Set(fmt.Sprintf("X-Hostile-%d", i), "v")
	}
	return h
}

// bigHeader is one NATS header of 60 KiB (JetStream refuses 64 KiB).
func bigHeader() nats.Header {
	return nats.Header{"X-Hostile": []string{strings.Repeat("h", 60<<10)}}
}

// engineEvent wraps one tagged-map event in a batch.
func engineEvent(ev mpMap) []byte {
	return mp(mpMap{"ts", 1.5, "events", mpArr{ev}})
}

func storedEvent(kv ...any) mpMap {
	ev := mpMap{"type", "BlockStored", "block_hashes", mpArr{1}, "parent_block_hash", nil,
		"token_ids", mpArr{1, 2, 3, 4}, "block_size", 4}
	return append(ev, kv...)
}

type hostileCase struct {
	class  string
	on     string // target kind
	data   []byte
	ct     string
	header nats.Header
	reason string // the dead-letter reason must contain it
}

func hostileCases() []hostileCase {
	big := bigHeader()
	many := manyHeaders()
	const mpCT = "application/msgpack"
	validReq := []byte(`{"request_id":"h"}`)
	validResp := []byte(`{"request_id":"h","finish_reason":"stop"}`)
	validKV := []byte(`{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`)
	validLoad := []byte(`{"worker_id":1,"kv_used_blocks":1}`)
	// One byte past the default --max-string (64 KiB).
	longName := strings.Repeat("a", schemas.DefaultLimits().MaxString+1)
	return []hostileCase{
		// requests
		{"truncated msgpack", "requests", []byte{0x83, 0xaa, 'r', 'e', 'q'}, mpCT, nil, "truncated msgpack"},
		{"truncated JSON", "requests", []byte(`{"request_id":"a","token_ids":[1,2`), "", nil, "invalid JSON"},
		{"wrong type JSON", "requests", []byte(`{"request_id":5}`), "", nil, "request_id"},
		{"wrong type msgpack", "requests", mp(mpMap{"request_id", 5}), mpCT, nil, "wrong msgpack type"},
		{"10M tokens msgpack claim", "requests", mp(mpMap{"request_id", "a", "token_ids", claim10M}), mpCT, nil, "too many token_ids"},
		{"tokens over limit JSON", "requests", []byte(`{"request_id":"a","token_ids":` + zeros(100_001) + `}`), "", nil, "too many token_ids"},
		{"deep JSON", "requests", []byte(`{"request_id":"a","x":` + nestedJSON), "", nil, "nested too deeply"},
		{"deep msgpack", "requests", mp(mpMap{"request_id", "a", "x", nestedMsgpack}), mpCT, nil, "nested too deeply"},
		{"invalid UTF-8 JSON", "requests", []byte("{\"request_id\":\"\xff\xfe\"}"), "", nil, "UTF-8"},
		{"invalid UTF-8 msgpack", "requests", mp(mpMap{"request_id", mpStr{0xff, 0xfe}}), mpCT, nil, "UTF-8"},
		{"invalid UTF-8 header name", "requests", mp(mpMap{"request_id", "a", "headers", mpMap{mpStr{0xc3}, "1"}}), mpCT, nil, "UTF-8"},
		{"NATS header of 60 KiB", "requests", validReq, "", big, "NATS headers too large"},
		{"1000 NATS headers", "requests", validReq, "", many, "too many NATS headers"},
		{"unknown fields only", "requests", []byte(`{"type":"BlockMoved","x":1}`), "", nil, "missing request_id"},
		{"negative received_at_ms", "requests", []byte(`{"request_id":"a","received_at_ms":-1}`), "", nil, "received_at_ms out of range"},
		{"received_at_ms 2^64+1", "requests", []byte(`{"request_id":"a","received_at_ms":18446744073709551617}`), "", nil, "received_at_ms"},
		{"received_at_ms max int64", "requests", mp(mpMap{"request_id", "a", "received_at_ms", int64(1<<63 - 1)}), mpCT, nil, "received_at_ms out of range"},
		{"token id 2^32", "requests", mp(mpMap{"request_id", "a", "token_ids", mpArr{uint64(1 << 32)}}), mpCT, nil, "overflows"},
		{"lora_name over --max-string", "requests", []byte(`{"request_id":"a","lora_name":"` + longName + `"}`), "", nil, "lora_name too long"},
		{"cache_salt over --max-string", "requests", mp(mpMap{"request_id", "a", "cache_salt", longName}), mpCT, nil, "cache_salt too long"},

		// responses
		{"truncated msgpack", "responses", mp(mpMap{"request_id", "a", "worker_id", 1})[:8], mpCT, nil, "truncated msgpack"},
		{"wrong type JSON", "responses", []byte(`{"request_id":"a","worker_id":"two"}`), "", nil, "worker_id"},
		{"wrong type msgpack", "responses", mp(mpMap{"request_id", "a", "tool_calls", "grep"}), mpCT, nil, "wrong msgpack type"},
		{"10M tokens msgpack claim", "responses", mp(mpMap{"request_id", "a", "output_token_ids", claim10M}), mpCT, nil, "too many output_token_ids"},
		{"tokens over limit JSON", "responses", []byte(`{"request_id":"a","output_token_ids":` + zeros(100_001) + `}`), "", nil, "too many output_token_ids"},
		{"deep JSON", "responses", []byte(`{"request_id":"a","tool_calls":` + nestedJSON), "", nil, "nested too deeply"},
		{"invalid UTF-8 msgpack", "responses", mp(mpMap{"request_id", "a", "finish_reason", mpStr{0xed, 0xa0, 0x80}}), mpCT, nil, "UTF-8"},
		{"NATS header of 60 KiB", "responses", validResp, "", big, "NATS headers too large"},
		{"1000 NATS headers", "responses", validResp, "", many, "too many NATS headers"},
		{"unknown fields only", "responses", []byte(`{"type":"Unknown"}`), "", nil, "missing request_id"},
		{"negative worker_id JSON", "responses", []byte(`{"request_id":"a","worker_id":-1}`), "", nil, "worker_id"},
		{"negative worker_id msgpack", "responses", mp(mpMap{"request_id", "a", "worker_id", -1}), mpCT, nil, "negative"},
		{"worker_id 2^64+1", "responses", []byte(`{"request_id":"a","worker_id":18446744073709551617}`), "", nil, "worker_id"},
		{"dp_rank 2^32", "responses", mp(mpMap{"request_id", "a", "dp_rank", uint64(1 << 32)}), mpCT, nil, "overflows"},
		{"completed_at_ms max int64", "responses", []byte(`{"request_id":"a","completed_at_ms":9223372036854775807}`), "", nil, "completed_at_ms out of range"},

		// kv.events, Dynamo RouterEvent JSON
		{"truncated JSON", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"data":`), "", nil, "invalid JSON"},
		{"lora_name over --max-string", "kv_events", mp(mpArr{1.5, mpArr{mpArr{"BlockStored", mpArr{1}, nil, mpArr{1, 2, 3, 4}, 4, nil, "GPU", longName}}, 0}),
			mpCT, nil, "lora_name too long"},
		{"wrong type", "kv_events", []byte(`{"worker_id":"one","event":{"event_id":1,"data":"cleared"}}`), "", nil, "worker_id"},
		{"blocks over limit", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"data":{"stored":{"blocks":[` +
			strings.Repeat("{},", 100_000) + `{}]}}}}`), "", nil, "too many blocks"},
		{"deep JSON", "kv_events", []byte(`{"worker_id":1,"event":` + nestedJSON), "", nil, "nested too deeply"},
		{"invalid UTF-8", "kv_events", []byte("{\"worker_id\":1,\"event\":{\"event_id\":1,\"data\":\"\xff\"}}"), "", nil, "UTF-8"},
		{"NATS header of 60 KiB", "kv_events", validKV, "", big, "NATS headers too large"},
		{"1000 NATS headers", "kv_events", validKV, "", many, "too many NATS headers"},
		{"unknown event tag", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"data":{"moved":{}}}}`), "", nil, "unknown event tag"},
		{"unknown string event tag", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"data":"moved"}}`), "", nil, "unknown event tag"},
		{"negative worker_id", "kv_events", []byte(`{"worker_id":-1,"event":{"event_id":1,"data":"cleared"}}`), "", nil, "worker_id"},
		{"event_id 2^64+1", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":18446744073709551617,"data":"cleared"}}`), "", nil, "event_id"},
		{"dp_rank 2^32", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"dp_rank":4294967296,"data":"cleared"}}`), "", nil, "dp_rank"},
		{"block hash 2^64+1", "kv_events", []byte(`{"worker_id":1,"event":{"event_id":1,"data":{"removed":{"block_hashes":[18446744073709551617]}}}}`), "", nil, "block hash"},

		// kv.events, engine EventBatch msgpack
		{"engine truncated msgpack", "kv_events", engineEvent(storedEvent())[:20], "", nil, "truncated msgpack"},
		{"engine wrong type", "kv_events", engineEvent(mpMap{"type", "BlockRemoved", "block_hashes", "x"}), "", nil, "block_hashes"},
		{"engine 10M tokens claim", "kv_events", engineEvent(mpMap{"type", "BlockStored", "block_hashes", mpArr{1},
			"parent_block_hash", nil, "token_ids", claim10M}), "", nil, "too many token_ids"},
		{"engine tokens over limit", "kv_events", engineEvent(storedEvent("token_ids", mpRaw(zerosMsgpack(100_001)))), "", nil, "too many token_ids"},
		{"engine deep msgpack", "kv_events", mp(mpMap{"ts", 1.5, "events", mpArr{}, "x", nestedMsgpack}), "", nil, "nested too deeply"},
		{"engine invalid UTF-8 tag", "kv_events", engineEvent(mpMap{"type", mpStr{0xff, 'B'}}), "", nil, "unknown event tag"},
		{"engine invalid UTF-8 medium", "kv_events", engineEvent(storedEvent("medium", mpStr{0xff})), "", nil, "invalid UTF-8 medium"},
		{"engine NATS header of 60 KiB", "kv_events", engineEvent(mpMap{"type", "AllBlocksCleared"}), "", big, "NATS headers too large"},
		{"engine unknown event tag", "kv_events", engineEvent(mpMap{"type", "BlockMoved"}), "", nil, "unknown event tag"},
		{"engine unknown array tag", "kv_events", mp(mpArr{1.5, mpArr{mpArr{"BlockMoved", 1}}}), "", nil, "unknown event tag"},
		{"engine negative dp rank", "kv_events", mp(mpMap{"ts", 1.5, "events", mpArr{}, "data_parallel_rank", -1}), "", nil, "data_parallel_rank"},
		{"engine dp rank 2^40", "kv_events", mp(mpMap{"ts", 1.5, "events", mpArr{}, "data_parallel_rank", int64(1 << 40)}), "", nil, "data_parallel_rank"},
		{"engine negative block_size", "kv_events", engineEvent(storedEvent("block_size", -1)), "", nil, "block_size"},
		{"engine block_size 2^62", "kv_events", engineEvent(storedEvent("block_size", int64(1<<62))), "", nil, "block_size"},
		{"engine token id 2^64-1", "kv_events", engineEvent(storedEvent("token_ids", mpArr{uint64(1<<64 - 1), 1, 2, 3})), "", nil, "token_ids"},
		{"engine negative token id", "kv_events", engineEvent(storedEvent("token_ids", mpArr{-5, 1, 2, 3})), "", nil, "token id"},
		{"engine seq header -1", "kv_events", engineEvent(mpMap{"type", "AllBlocksCleared"}), "",
			nats.Header{schemas.HeaderBridgeSeq: []string{"-1"}}, schemas.HeaderBridgeSeq},
		{"engine seq header 2^64", "kv_events", engineEvent(mpMap{"type", "AllBlocksCleared"}), "",
			nats.Header{schemas.HeaderBridgeSeq: []string{"18446744073709551616"}}, schemas.HeaderBridgeSeq},

		// kv.load
		{"truncated msgpack", "load", mp(mpMap{"worker_id", 1, "kv_used_blocks", 5})[:6], mpCT, nil, "truncated msgpack"},
		{"truncated JSON", "load", []byte(`{"worker_id":1,"kv_used_blocks":`), "", nil, "invalid JSON"},
		{"wrong type JSON", "load", []byte(`{"worker_id":"x"}`), "", nil, "worker_id"},
		{"wrong type msgpack", "load", mp(mpMap{"kv_used_blocks", "many"}), mpCT, nil, "wrong msgpack type"},
		{"10M array claim", "load", mp(mpMap{"worker_id", 1, "x", claim10M}), mpCT, nil, "too large"},
		{"array over limit JSON", "load", []byte(`{"worker_id":1,"x":` + zeros(100_001) + `}`), "", nil, "too large"},
		{"deep JSON", "load", []byte(`{"worker_id":1,"x":` + nestedJSON), "", nil, "nested too deeply"},
		{"deep msgpack", "load", mp(mpMap{"worker_id", 1, "x", nestedMsgpack}), mpCT, nil, "nested too deeply"},
		{"invalid UTF-8", "load", []byte("{\"worker_id\":1,\"x\":\"\xc0\xaf\"}"), "", nil, "UTF-8"},
		{"NATS header of 60 KiB", "load", validLoad, "", big, "NATS headers too large"},
		{"1000 NATS headers", "load", validLoad, "", many, "too many NATS headers"},
		{"negative worker_id JSON", "load", []byte(`{"worker_id":-1}`), "", nil, "worker_id"},
		{"negative counter msgpack", "load", mp(mpMap{"worker_id", 1, "kv_used_blocks", -5}), mpCT, nil, "negative"},
		{"counter 2^64+1", "load", []byte(`{"worker_id":1,"kv_used_blocks":18446744073709551617}`), "", nil, "kv_used_blocks"},
		{"dp_rank 2^32", "load", mp(mpMap{"worker_id", 1, "dp_rank", uint64(1 << 32)}), mpCT, nil, "overflows"},
	}
}

// zerosMsgpack is a msgpack array of n zeros.
func zerosMsgpack(n int) []byte {
	return append(msgp.AppendArrayHeader(nil, uint32(n)), make([]byte, n)...)
}

// hostileRig runs every consumer hintstream has on one embedded server.
type hostileRig struct {
	js       jetstream.JetStream
	counters *metrics.Families
	loads    *routing.LoadTable
	targets  map[string]target

	mu         sync.Mutex
	terminated map[string]string // "<stream>/<seq>" -> reason, from the server's advisories
}

func newHostileRig(t *testing.T) *hostileRig {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx := context.Background()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	h := &hostileRig{js: js, counters: metrics.New(), loads: routing.NewLoadTable(),
		terminated: map[string]string{}}
	sub, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", func(m *nats.Msg) {
		var adv struct {
			Stream    string `json:"stream"`
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(m.Data, &adv) == nil {
			h.mu.Lock()
			h.terminated[fmt.Sprintf("%s/%d", adv.Stream, adv.StreamSeq)] = adv.Reason
			h.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	idx, err := pins.OpenRequestIndex(ctx, js, "", set.Requests.Name, time.Hour, hostileLimits)
	if err != nil {
		t.Fatal(err)
	}
	dlq := NewDeadLetter(js, "")
	log := discard()
	// Requests are decided on without pins, responses with them (only an
	// index), state events by the first engine.
	lim := engine.Decisions{Limits: hostileLimits}
	eng := testEngine(t, lim, engine.EngineDeps{Loads: h.loads, Counters: h.counters, Log: log})
	pinEng := testEngine(t, lim, engine.EngineDeps{Pins: &pins.Deps{Index: idx}, Counters: h.counters, Log: log})
	reqs := NewRequestConsumer(js, RequestConfig{Stream: set.Requests.Name}, eng.Request, dlq, h.counters, log)
	resps := NewResponseConsumer(js, ResponseConfig{Stream: set.Responses.Name}, pinEng.Response, dlq,
		h.counters, log)
	kv := NewStateConsumer(js, StateConfig{Kind: "kv_events", Stream: set.KVEvents.Name},
		ApplyKV(index.NewApplier(index.New(), index.ApplierConfig{Counters: h.counters}), hostileLimits), dlq, h.counters, log)
	load := NewStateConsumer(js, StateConfig{Kind: "load", Stream: set.Load.Name},
		ApplyMessages(eng.Load), dlq, h.counters, log)
	for _, start := range []func(context.Context) error{reqs.Start, resps.Start, kv.Start, load.Start} {
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(reqs.Stop)
	t.Cleanup(resps.Stop)
	t.Cleanup(kv.Stop)
	t.Cleanup(load.Stop)

	counted := func(name string) func(*hostileRig, int) bool {
		return func(h *hostileRig, n int) bool { return metricstest.Get(h.counters, name) >= uint64(n) }
	}
	h.targets = map[string]target{
		"requests": {kind: "requests", subject: streams.RequestSubject("m"), stream: set.Requests.Name,
			durable: "hintstream-requests",
			valid:   func(n int) []byte { return fmt.Appendf(nil, `{"request_id":"ok-%d"}`, n) },
			handled: counted("hintstream_requests_plain_total")},
		"responses": {kind: "responses", subject: streams.ResponseSubject("m"), stream: set.Responses.Name,
			durable: "hintstream-responses",
			valid:   func(n int) []byte { return fmt.Appendf(nil, `{"request_id":"ok-%d","finish_reason":"stop"}`, n) },
			handled: counted("hintstream_responses_no_pin_total")},
		"kv_events": {kind: "kv_events", subject: streams.KVEventSubject(1), stream: set.KVEvents.Name,
			valid: func(n int) []byte {
				return fmt.Appendf(nil, `{"worker_id":1,"event":{"event_id":%d,"data":"cleared"}}`, n)
			},
			handled: counted("hintstream_kv_events_applied_total|cleared")},
		"load": {kind: "load", subject: streams.LoadSubject(1), stream: set.Load.Name,
			valid: func(n int) []byte { return fmt.Appendf(nil, `{"worker_id":1,"kv_used_blocks":%d}`, n) },
			handled: func(h *hostileRig, n int) bool {
				return h.loads.Get(kvevents.WorkerKey{WorkerID: 1}).UsedBlocks() == uint64(n)
			}},
	}
	return h
}

func (h *hostileRig) publish(t *testing.T, subject string, data []byte, ct string, hdr nats.Header) uint64 {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for k, vs := range hdr {
		m.Header[k] = vs
	}
	if ct != "" {
		m.Header.Set("Content-Type", ct)
	}
	ack, err := h.js.PublishMsg(context.Background(), m)
	if err != nil {
		t.Fatalf("publish %d bytes: %v", len(data), err)
	}
	return ack.Sequence
}

// Every class of hostile input on every subject hintstream consumes is
// terminated (trigger consumers) or skipped (ordered state consumers),
// copied to hintstream.dlq.<kind> with a reason naming the problem,
// counted once under that reason, and the next valid message is processed.
func TestHostileInputOnEverySubject(t *testing.T) {
	h := newHostileRig(t)
	ctx := context.Background()
	dlq, err := h.js.Stream(ctx, streams.DefaultSet().DeadLetter.Name)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{} // follow-ups published per target
	for _, c := range hostileCases() {
		tg := h.targets[c.on]
		t.Run(c.on+"/"+c.class, func(t *testing.T) {
			malformed := "hintstream_" + tg.kind + "_malformed_total"
			before := metricstest.Snapshot(h.counters, malformed)
			seq := h.publish(t, tg.subject, c.data, c.ct, c.header)
			seen[c.on]++
			n := seen[c.on]
			h.publish(t, tg.subject, tg.valid(n), "", nil)
			natstest.Eventually(t, 10*time.Second, func() bool { return tg.handled(h, n) },
				"the valid %s message after the hostile one processed", tg.kind)

			// Counted once, under one reason.
			after := metricstest.Snapshot(h.counters, malformed)
			if d := after[malformed] - before[malformed]; d != 1 {
				t.Fatalf("%s.malformed went up by %d, want 1", tg.kind, d)
			}
			label := ""
			for name, v := range after {
				if r, ok := strings.CutPrefix(name, malformed+"|"); ok && v != before[name] {
					if label != "" || v-before[name] != 1 {
						t.Fatalf("counters moved: before %v after %v", before, after)
					}
					label = r
				}
			}
			if !strings.Contains(label, c.reason) {
				t.Fatalf("counted under reason %q, want one naming %q", label, c.reason)
			}

			// Copied to the dead-letter subject, with the reason.
			m, err := dlq.GetLastMsgForSubject(ctx, "hintstream.dlq."+tg.kind)
			if err != nil {
				t.Fatalf("no dead-letter copy: %v", err)
			}
			if got := m.Header.Get(HeaderDLQSeq); got != strconv.FormatUint(seq, 10) {
				t.Fatalf("last dead-letter copy is of seq %s, want %d", got, seq)
			}
			if got := m.Header.Get(HeaderDLQReason); got != label {
				t.Fatalf("dead-letter reason %q, counted reason %q", got, label)
			}
			if m.Header.Get(HeaderDLQStream) != tg.stream || m.Header.Get(HeaderDLQSubject) != tg.subject {
				t.Fatalf("dead-letter origin headers %v", m.Header)
			}
			if c.header == nil && !bytes.Equal(m.Data, c.data) {
				t.Fatalf("dead-letter copy holds %d bytes, the original %d", len(m.Data), len(c.data))
			}
			if strings.Contains(c.reason, "NATS header") && m.Header.Get(HeaderDLQHeadersDropped) == "" {
				t.Fatalf("oversized headers copied: %d header names", len(m.Header))
			}

			// Terminated (not acked, not retried) by the durable consumers.
			if tg.durable != "" {
				key := fmt.Sprintf("%s/%d", tg.stream, seq)
				natstest.Eventually(t, 5*time.Second, func() bool {
					h.mu.Lock()
					defer h.mu.Unlock()
					return h.terminated[key] == label
				}, "a terminated advisory for %s with reason %q", key, label)
			}
		})
	}
	for _, name := range []string{"hintstream-requests", "hintstream-responses"} {
		stream := map[string]string{"hintstream-requests": "LLM_REQUESTS", "hintstream-responses": "LLM_RESPONSES"}[name]
		c, err := h.js.Consumer(ctx, stream, name)
		if err != nil {
			t.Fatal(err)
		}
		natstest.Eventually(t, 5*time.Second, func() bool {
			info, err := c.Info(ctx)
			return err == nil && info.NumAckPending == 0 && info.NumPending == 0
		}, "%s settled", name)
		if info, _ := c.Info(ctx); info.NumRedelivered != 0 {
			t.Errorf("%s: %d redeliveries; hostile input must be terminated at once", name, info.NumRedelivered)
		}
	}
	for _, name := range []string{"hintstream_requests_dead_letter_errors_total", "hintstream_kv_events_dead_letter_errors_total",
		"hintstream_load_dead_letter_errors_total", "hintstream_kv_events_apply_errors_total", "hintstream_load_apply_errors_total"} {
		if v := metricstest.Get(h.counters, name); v != 0 {
			t.Errorf("%s = %d", name, v)
		}
	}
}

// Headers past JetStream's own 64 KiB cap (a 1 MiB value, 10,000 of them)
// never reach a stream, so never reach hintstream: the publish fails.
func TestHugeNATSHeadersRefusedByJetStream(t *testing.T) {
	h := newHostileRig(t)
	huge := nats.Header{"X-Hostile": []string{strings.Repeat("h", 1<<20-4096)}}
	tenK := nats.Header{}
	for i := range 10_000 {
		tenK.Set(fmt.Sprintf("X-Hostile-%d", i), "v")
	}
	for name, hdr := range map[string]nats.Header{"1 MiB value": huge, "10k headers": tenK} {
		for _, tg := range h.targets {
			m := nats.NewMsg(tg.subject)
			m.Data = tg.valid(1)
			m.Header = hdr
			_, err := h.js.PublishMsg(context.Background(), m)
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10097 { // JSStreamHeaderExceedsMaximumErr
				t.Fatalf("%s on %s: publish error %v, want JetStream's header limit", name, tg.subject, err)
			}
		}
	}
}

// A dead-letter copy of a message at the server's max payload is cut to
// fit (and says so) rather than refused, which would keep the original
// from being terminated.
func TestDeadLetterCopyOfMaxPayloadMessage(t *testing.T) {
	h := newHostileRig(t)
	ctx := context.Background()
	tg := h.targets["requests"]
	limit := int(h.js.Conn().MaxPayload())
	data := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), limit-200)...)
	data = append(data, `"}`...)
	seq := h.publish(t, tg.subject, data, "", nil)
	h.publish(t, tg.subject, tg.valid(1), "", nil)
	natstest.Eventually(t, 10*time.Second, func() bool { return tg.handled(h, 1) }, "the valid request processed")
	dlq, err := h.js.Stream(ctx, streams.DefaultSet().DeadLetter.Name)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		m, err := dlq.GetLastMsgForSubject(ctx, "hintstream.dlq.requests")
		return err == nil && m.Header.Get(HeaderDLQSeq) == strconv.FormatUint(seq, 10)
	}, "the copy stored")
	m, _ := dlq.GetLastMsgForSubject(ctx, "hintstream.dlq.requests")
	if m.Header.Get(HeaderDLQReason) != "missing request_id" || m.Header.Get(HeaderDLQTruncated) != strconv.Itoa(len(data)) ||
		!bytes.HasPrefix(data, m.Data) || len(m.Data) >= len(data) {
		t.Fatalf("copy: headers %v, %d of %d bytes", m.Header, len(m.Data), len(data))
	}
	if v := h.counters.RequestsMalformed.Value("missing request_id"); v != 1 {
		t.Fatalf("counted %d times", v)
	}
}

// Hostile worker records in the registry bucket are counted and ignored;
// a valid record written after them is used.
func TestHostileRegistryEntriesCountedAndIgnored(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	r, err := registry.Open(ctx, js, registry.WithLogger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	defer natstest.Run(t, r.Run)()
	kv, err := js.KeyValue(ctx, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	endpoints := `["tcp://127.0.0.1:1"]`
	hostile := []string{
		`{"worker_id":5,"kv_block_size":16,"hint_endpoints":` + endpoints, // truncated
		`{"worker_id":"5","kv_block_size":16,"hint_endpoints":` + endpoints + `}`,
		`{"worker_id":5,"kv_block_size":16,"hint_endpoints":` + zeros(100_000) + `}`,
		`{"worker_id":5,"kv_block_size":16,"x":` + nestedJSON,
		"{\"worker_id\":5,\"model\":\"\xff\",\"kv_block_size\":16,\"hint_endpoints\":" + endpoints + "}",
		`{"worker_id":-5,"kv_block_size":16,"hint_endpoints":` + endpoints + `}`,
		`{"worker_id":18446744073709551621,"kv_block_size":16,"hint_endpoints":` + endpoints + `}`,
		`{"worker_id":5,"kv_block_size":-16,"hint_endpoints":` + endpoints + `}`,
		`{"worker_id":5,"kv_block_size":0,"hint_endpoints":` + endpoints + `}`,
		`{"worker_id":5,"kv_block_size":16,"hint_endpoints":["http://x"]}`,
		string(mp(mpMap{"worker_id", 5})),
	}
	for i, v := range hostile {
		if _, err := kv.Put(ctx, "5", []byte(v)); err != nil {
			t.Fatal(err)
		}
		natstest.Eventually(t, 5*time.Second, func() bool { return r.Invalid() == uint64(i+1) },
			"hostile entry %d counted", i)
		if _, ok := r.Get(5); ok {
			t.Fatalf("hostile entry %d visible", i)
		}
	}
	if _, err := kv.Put(ctx, "5", []byte(`{"worker_id":5,"model":"ok","kv_block_size":16,"hint_endpoints":`+endpoints+`}`)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { w, ok := r.Get(5); return ok && w.Model == "ok" },
		"the valid record after the hostile ones")
	if r.Invalid() != uint64(len(hostile)) {
		t.Fatalf("Invalid() = %d, want %d", r.Invalid(), len(hostile))
	}
}

// A KV event of a storage tier none of Dynamo's (a RouterEvent's
// storage_tier, an engine's medium) is counted and ignored: not
// malformed, not dead-lettered, and the events after it are applied.
func TestUnknownTierCountedAndIgnored(t *testing.T) {
	h := newHostileRig(t)
	tg := h.targets["kv_events"]
	for i, data := range [][]byte{
		[]byte(`{"worker_id":1,"storage_tier":"tape","event":{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}}}}`),
		mp(mpArr{1.5, mpArr{mpArr{"BlockStored", mpArr{1}, nil, mpArr{1, 2, 3, 4}, 4, nil, "TAPE", nil}}, 0}),
	} {
		h.publish(t, tg.subject, data, "", nil)
		h.publish(t, tg.subject, tg.valid(i+1), "", nil)
		natstest.Eventually(t, 10*time.Second, func() bool { return tg.handled(h, i+1) }, "the event after the unknown tier applied")
		if got := h.counters.KVEventsUnknownTier.Value(); got != uint64(i+1) {
			t.Fatalf("kv_events.unknown_tier = %d, want %d", got, i+1)
		}
	}
	if got := h.counters.KVEventsMalformed.Total(); got != 0 {
		t.Fatalf("kv_events.malformed = %d, want 0", got)
	}
	dlq, err := h.js.Stream(context.Background(), streams.DefaultSet().DeadLetter.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.GetLastMsgForSubject(context.Background(), "hintstream.dlq.kv_events"); err == nil {
		t.Fatal("an unknown-tier event was dead-lettered")
	}
}
