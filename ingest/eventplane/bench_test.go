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
