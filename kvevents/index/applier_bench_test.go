package index

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// decodeApply is a KV-event consumer's work on one message
// (consumers.ApplyKV): decoded by d, applied by a.
func decodeApply(a *Applier, d *kvevents.Decoder, m kvevents.Message) error {
	if a.Skips(m.Subject) {
		return nil
	}
	b, err := d.Decode(m)
	if err != nil {
		return err
	}
	return a.Apply(b)
}

// kvBenchMessages are n Dynamo RouterEvent JSON messages as the ingest
// load test publishes them: 4 workers, each a chain of stored events of 4
// blocks, every event's parent the previous one's last block.
func kvBenchMessages(b testing.TB, n int) []kvevents.Message {
	b.Helper()
	const workers, blocks = 4, 4
	msgs := make([]kvevents.Message, n)
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
		msgs[i] = kvevents.Message{Subject: "kv.events.m", Data: body}
	}
	return msgs
}

// kvEngineBenchMessages are n vLLM EventBatches (array form) as the
// ingest load test publishes them with SPEED_ENGINE_BATCHES: 4 workers
// (the subject names each), one BlockStored of 4 blocks of 16 tokens per
// batch, chained on the worker's previous batch.
func kvEngineBenchMessages(n int) []kvevents.Message {
	const workers, blocks = 4, 4
	msgs := make([]kvevents.Message, n)
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
		msgs[i] = kvevents.Message{Subject: "kv.events." + strconv.Itoa(w+1), Data: b}
	}
	return msgs
}

// BenchmarkKV is the decode and apply of one KV-event message (a 4-block
// stored RouterEvent), as the state consumer does it (decodeApply); the
// index starts empty every 16,384 messages (outside the timing).
func BenchmarkKV(b *testing.B) {
	b.Run("format=json", func(b *testing.B) { benchKV(b, kvBenchMessages(b, 1<<14)) })
	b.Run("format=msgpack", func(b *testing.B) { benchKV(b, kvEngineBenchMessages(1<<14)) })
}

func benchKV(b *testing.B, msgs []kvevents.Message) {
	var a *Applier
	var ix *Memory
	d := &kvevents.Decoder{}
	fresh := func() {
		ix = New()
		a = NewApplier(ix, ApplierConfig{})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%len(msgs) == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		if err := decodeApply(a, d, msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if st := ix.Stats(); st.Entries == 0 || st.UnknownParent != 0 {
		b.Fatalf("after %d messages: %+v", i, st)
	}
}

// BenchmarkKVSteady is the whole per-message ingest path at the load
// test's scale: the bytes of one stored KV-event message (a Dynamo
// RouterEvent JSON of 4 blocks, or a vLLM msgpack EventBatch of one
// BlockStored of 4 blocks) decoded and applied (decodeApply) through a
// Holding of 64 registered workers to an index sized for 4M entries
// (WithCapacity) and pre-filled with 1M. Workers take turns, each a
// chain of 16 events (the event after a chain's last starts a new one),
// hashes spread over 64 bits, token ids at random in Qwen's vocabulary,
// as loadtest/speed's ingest publishes them.
// The messages are made 8,192 at a time with the timer stopped; should
// the index fill up, it is rebuilt (timer stopped) too. Besides ns/op
// it reports cpu-ns/op, the process's CPU time per message.
func BenchmarkKVSteady(b *testing.B) {
	b.Run("format=json", func(b *testing.B) { benchKVSteady(b, false) })
	b.Run("format=msgpack", func(b *testing.B) { benchKVSteady(b, true) })
}

// kvSteadyGen makes the messages of BenchmarkKVSteady.
type kvSteadyGen struct {
	engine bool
	next   uint64   // events made so far
	ids    []uint64 // per worker: its last event id
	last   []uint64 // per worker: its last block's hash
}

const (
	kvSteadyWorkers  = 64
	kvSteadyBlocks   = 4
	kvSteadyChain    = 16 // events per chain
	kvSteadyCapacity = 4 << 20
	kvSteadyPrefill  = 1 << 20
)

func newKVSteadyGen(engine bool) *kvSteadyGen {
	return &kvSteadyGen{engine: engine, ids: make([]uint64, kvSteadyWorkers), last: make([]uint64, kvSteadyWorkers)}
}

// event returns the next event as a RouterEvent, and its worker.
func (g *kvSteadyGen) event() (schemas.RouterEvent, int) {
	w := int(g.next % kvSteadyWorkers)
	st := &schemas.KvCacheStoreData{}
	if g.ids[w]%kvSteadyChain != 0 {
		p := schemas.BlockHash(g.last[w])
		st.ParentHash = &p
	}
	for j := range kvSteadyBlocks {
		h := mix64(uint64(w)<<40 | g.next<<4 | uint64(j))
		st.Blocks = append(st.Blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(h), TokensHash: schemas.BlockHash(mix64(h))})
		g.last[w] = h
	}
	g.ids[w]++
	g.next++
	return schemas.RouterEvent{WorkerID: uint64(w + 1), Event: schemas.KvCacheEvent{EventID: g.ids[w],
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}}}, w
}

// message encodes ev in the generator's format.
func (g *kvSteadyGen) message(b testing.TB, ev schemas.RouterEvent, w int) kvevents.Message {
	subject := "kv.events." + strconv.Itoa(w+1)
	if !g.engine {
		body, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		return kvevents.Message{Subject: subject, Data: body}
	}
	st := ev.Event.Data.Stored
	m := msgp.AppendArrayHeader(nil, 3)
	m = msgp.AppendFloat64(m, 1.5)
	m = msgp.AppendArrayHeader(m, 1)
	m = msgp.AppendArrayHeader(m, 7)
	m = msgp.AppendString(m, "BlockStored")
	m = msgp.AppendArrayHeader(m, uint32(len(st.Blocks)))
	for _, bl := range st.Blocks {
		m = msgp.AppendUint64(m, uint64(bl.BlockHash))
	}
	if st.ParentHash == nil {
		m = msgp.AppendNil(m)
	} else {
		m = msgp.AppendUint64(m, uint64(*st.ParentHash))
	}
	m = msgp.AppendArrayHeader(m, uint32(16*len(st.Blocks)))
	for t := range 16 * len(st.Blocks) {
		// Qwen's vocabulary, as loadtest/speed's prompts: uint16 and
		// uint32 ids at random.
		m = msgp.AppendUint32(m, uint32(mix64(uint64(st.Blocks[0].BlockHash)+uint64(t))%151936))
	}
	m = msgp.AppendInt(m, 16)
	m = msgp.AppendNil(m)
	m = msgp.AppendString(m, "GPU")
	m = msgp.AppendInt(m, 0)
	return kvevents.Message{Subject: subject, Data: m}
}

func benchKVSteady(b *testing.B, engine bool) {
	var (
		a   *Applier
		ix  *Memory
		gen *kvSteadyGen
	)
	d := &kvevents.Decoder{}
	fresh := func() {
		ix = New(WithCapacity(kvSteadyCapacity))
		h := NewHolding(ix, HoldingConfig{}, nil)
		for w := range kvSteadyWorkers {
			h.Register(uint64(w+1), 1)
		}
		a = NewApplier(h, ApplierConfig{})
		gen = newKVSteadyGen(engine)
		for gen.next*kvSteadyBlocks < kvSteadyPrefill {
			ev, w := gen.event()
			k := kvevents.FromRouterEvent(&ev)
			if engine {
				k.Worker, k.EventID = kvevents.WorkerKey{WorkerID: uint64(w + 1)}, 0
			}
			if err := h.Apply(k); err != nil {
				b.Fatal(err)
			}
		}
	}
	fresh()
	msgs := make([]kvevents.Message, 0, 1<<13)
	refill := func() {
		if gen.next*kvSteadyBlocks+uint64(cap(msgs))*kvSteadyBlocks > kvSteadyCapacity {
			fresh()
		}
		msgs = msgs[:0]
		for len(msgs) < cap(msgs) {
			ev, w := gen.event()
			msgs = append(msgs, gen.message(b, ev, w))
		}
	}
	refill()
	// cpu-ns/op is the process's CPU time in the timed part: on a shared
	// machine it is steadier than ns/op, which counts the time others ran.
	var cpu time.Duration
	cpuOK := true
	mark := func(sign time.Duration) {
		d, ok := processCPU()
		cpu += sign * d
		cpuOK = cpuOK && ok
	}
	b.ReportAllocs()
	i, n := 0, 0
	mark(-1)
	for b.Loop() {
		if i == len(msgs) {
			mark(1)
			b.StopTimer()
			refill()
			i = 0
			b.StartTimer()
			mark(-1)
		}
		if err := decodeApply(a, d, msgs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		n++
	}
	mark(1)
	if cpuOK && n > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	}
	if st := ix.Stats(); st.Entries < kvSteadyPrefill || st.UnknownParent != 0 {
		b.Fatalf("after %d messages: %+v", i, st)
	}
}
