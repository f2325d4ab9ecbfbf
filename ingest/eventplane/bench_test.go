package eventplane

import (
	"encoding/json"
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// benchEvent is a stored event of 16 blocks, as JSON (the durable
// JetStream path, the baseline) and as an event-plane frame.
func benchEvent(b *testing.B) (jsonBytes, frame []byte) {
	blocks := make([]schemas.StoredBlock, 16)
	arr := msgp.AppendArrayHeader(nil, 16)
	for i := range blocks {
		blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(1<<62 + uint64(i)), TokensHash: schemas.BlockHash(1<<63 + uint64(i))}
		arr = append(arr, payload(kv("block_hash", u(uint64(blocks[i].BlockHash))), kv("tokens_hash", u(uint64(blocks[i].TokensHash))),
			kv("mm_extra_info", raw([]byte{0xc0})))...)
	}
	ev := schemas.RouterEvent{WorkerID: 7, Event: schemas.KvCacheEvent{EventID: 42, Data: schemas.KvCacheEventData{
		Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}}
	jsonBytes, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	p := payload(kv("worker_id", u(7)), kv("storage_tier", s("device")), kv("residency_domain", s("worker")),
		kv("event", raw(payload(kv("event_id", u(42)), kv("data", raw(payload(kv("stored", raw(payload(
			kv("parent_hash", raw([]byte{0xc0})), kv("start_position", raw([]byte{0xc0})), kv("blocks", raw(arr)))))))),
			kv("dp_rank", u(0))))))
	return jsonBytes, reenvelope("kv-events", p)
}

// BenchmarkDecodeKVEvent compares an event-plane frame with the same
// RouterEvent in JSON (schemas.Limits.DecodeRouterEvent, fast path).
func BenchmarkDecodeKVEvent(b *testing.B) {
	js, frame := benchEvent(b)
	b.Run("json_baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (schemas.Limits{}).DecodeRouterEvent(js); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event_plane", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeKVEvent(frame, schemas.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeActiveSequences: a ZMQ batch of 256 AddRequests of 128
// sequence hashes each (a 2,048-token prompt at block size 16), and the
// one-event NATS frame, per event.
func BenchmarkDecodeActiveSequences(b *testing.B) {
	event := func(i int) []byte {
		h := msgp.AppendArrayHeader(nil, 128)
		for j := range 128 {
			h = msgp.AppendUint64(h, 1<<63+uint64(i*128+j))
		}
		add := payload(kv("token_sequence", raw(h)), kv("track_prefill_tokens", raw(msgp.AppendBool(nil, true))),
			kv("expected_output_tokens", raw([]byte{0xc0})), kv("prefill_load_hint", raw([]byte{0xc0})))
		return payload(kv("request_id", s("req-"+string(rune('a'+i%26)))), kv("worker", raw(payload(kv("worker_id", u(7)), kv("dp_rank", u(0))))),
			kv("data", raw(payload(kv("AddRequest", raw(add))))), kv("router_id", u(99)), kv("lora_name", raw([]byte{0xc0})))
	}
	arr := msgp.AppendArrayHeader(nil, 256)
	for i := range 256 {
		arr = append(arr, event(i)...)
	}
	batch := reenvelope(TopicActiveSequences, payload(kv("events", raw(arr))))
	one := reenvelope(TopicActiveSequences, event(0))
	for _, c := range []struct {
		name   string
		frame  []byte
		events int
	}{{"nats_one", one, 1}, {"zmq_batch_256", batch, 256}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			for b.Loop() {
				if fr, err := DecodeActiveSequences(c.frame, schemas.Limits{}); err != nil || len(fr.Events) != c.events {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.events), "ns/event")
		})
	}
}
