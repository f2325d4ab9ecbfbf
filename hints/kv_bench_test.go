package hints

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// kvBenchMessages are n Dynamo RouterEvent JSON messages as the ingest
// load test publishes them: 4 workers, each a chain of stored events of 4
// blocks, every event's parent the previous one's last block.
func kvBenchMessages(b testing.TB, n int) []Message {
	b.Helper()
	const workers, blocks = 4, 4
	msgs := make([]Message, n)
	last := make([]uint64, workers)
	for i := range msgs {
		w := i % workers
		st := &schemas.KvCacheStoreData{}
		if last[w] != 0 {
			p := schemas.BlockHash(last[w])
			st.ParentHash = &p
		}
		for j := range blocks {
			h := uint64(w+1)<<48 | uint64(i*blocks+j+1)
			st.Blocks = append(st.Blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(h), TokensHash: schemas.BlockHash(h * 0x9e3779b97f4a7c15)})
			last[w] = h
		}
		body, err := json.Marshal(schemas.RouterEvent{WorkerID: uint64(w + 1), StorageTier: schemas.TierDevice,
			Event: schemas.KvCacheEvent{EventID: uint64(i/workers + 1), Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}}})
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = Message{Subject: "kv.events.m", Data: body}
	}
	return msgs
}

// kvEngineBenchMessages are n vLLM EventBatches (array form) as the
// ingest load test publishes them with SPEED_ENGINE_BATCHES: 4 workers
// (the subject names each), one BlockStored of 4 blocks of 16 tokens per
// batch, chained on the worker's previous batch.
func kvEngineBenchMessages(n int) []Message {
	const workers, blocks = 4, 4
	msgs := make([]Message, n)
	last := make([]uint64, workers)
	for i := range msgs {
		w := i % workers
		b := msgp.AppendArrayHeader(nil, 3)
		b = msgp.AppendFloat64(b, 1.5)
		b = msgp.AppendArrayHeader(b, 1)
		b = msgp.AppendArrayHeader(b, 7)
		b = msgp.AppendString(b, "BlockStored")
		b = msgp.AppendArrayHeader(b, blocks)
		parent := last[w]
		for j := range blocks {
			last[w] = uint64(w+1)<<48 | uint64(i*blocks+j+1)
			b = msgp.AppendUint64(b, last[w])
		}
		if parent == 0 {
			b = msgp.AppendNil(b)
		} else {
			b = msgp.AppendUint64(b, parent)
		}
		b = msgp.AppendArrayHeader(b, 16*blocks)
		for t := range 16 * blocks {
			b = msgp.AppendUint32(b, uint32(i*7+t*1000))
		}
		b = msgp.AppendInt(b, 16)
		b = msgp.AppendNil(b)
		b = msgp.AppendString(b, "GPU")
		b = msgp.AppendInt(b, 0)
		msgs[i] = Message{Subject: "kv.events." + strconv.Itoa(w+1), Data: b}
	}
	return msgs
}

// BenchmarkKV is the decode and apply of one KV-event message (a 4-block
// stored RouterEvent), Engine.KV as the state consumer calls it; the
// index starts empty every 16,384 messages (outside the timing).
func BenchmarkKV(b *testing.B) {
	b.Run("format=json", func(b *testing.B) { benchKV(b, kvBenchMessages(b, 1<<14)) })
	b.Run("format=msgpack", func(b *testing.B) { benchKV(b, kvEngineBenchMessages(1<<14)) })
}

func benchKV(b *testing.B, msgs []Message) {
	var e *Engine
	var ix *kvevents.Index
	fresh := func() {
		var err error
		ix = kvevents.NewIndex()
		e, err = NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: ix,
			Workers: workers{}, Sender: actions.NewRecorder(nil, nil)})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%len(msgs) == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		if err := e.KV(msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if st := ix.Stats(); st.Entries == 0 || st.UnknownParent != 0 {
		b.Fatalf("after %d messages: %+v", i, st)
	}
}
