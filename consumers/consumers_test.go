package consumers

import (
	"context"
	"encoding/json"
	"github.com/hintstream/hintstream/internal/metricstest"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"
)

type staticWorkers []schemas.WorkerRecord

func (s staticWorkers) Workers() []schemas.WorkerRecord { return s }

// pullPayloads binds a real PULL socket and hands the payload of every
// one-action envelope it receives to decode.
func pullPayloads(t *testing.T, decode func(payload []byte)) string {
	return zmqtest.PullPayloads(t, decode)
}

// pull collects the request ids of the prefetches a PULL socket receives.
func pull(t *testing.T) (string, <-chan string) {
	t.Helper()
	out := make(chan string, 64)
	ep := pullPayloads(t, func(b []byte) {
		var p schemas.PrefetchPayload
		if _, err := p.UnmarshalMsg(b); err == nil {
			out <- p.RequestID
		}
	})
	return ep, out
}

type fixture struct {
	js       jetstream.JetStream
	nc       *nats.Conn
	counters *metrics.Families
	index    *index.Memory
	hints    <-chan string
	reqs     *RequestConsumer
	kv       *StateConsumer
}

func setup(t *testing.T, set streams.Set) *fixture {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	ep, got := pull(t)
	f := &fixture{js: js, nc: nc, counters: metrics.New(), index: index.New(), hints: got}
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = pool.Close(cctx)
	})
	eng := testEngine(t, engine.Decisions{}, engine.EngineDeps{Index: f.index,
		Workers: staticWorkers{{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{ep}}},
		Sender:  pool, Counters: f.counters})
	dlq := NewDeadLetter(js, "")
	def := streams.DefaultSet()
	f.reqs = NewRequestConsumer(js, RequestConfig{Stream: def.Requests.Name}, eng.Request, dlq, f.counters, nil)
	f.kv = NewStateConsumer(js, StateConfig{Kind: "kv_events", Stream: def.KVEvents.Name},
		ApplyKV(index.NewApplier(f.index, index.ApplierConfig{Counters: f.counters}), schemas.Limits{}), dlq, f.counters, nil)
	for _, start := range []func(context.Context) error{f.reqs.Start, f.kv.Start} {
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(f.reqs.Stop)
	t.Cleanup(f.kv.Stop)
	return f
}

func (f *fixture) publish(t *testing.T, subject string, data []byte, contentType string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	if contentType != "" {
		m.Header.Set("Content-Type", contentType)
	}
	if _, err := f.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func wakeJSON(t *testing.T, id, model string, receivedAt time.Time) []byte {
	t.Helper()
	b, err := json.Marshal(schemas.RequestEvent{RequestID: id, Model: model, TokenIDs: []uint32{1, 2, 3},
		Headers: map[string]string{schemas.HeaderWakeup: "1"}, ReceivedAtMs: receivedAt.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func expectHint(t *testing.T, hints <-chan string, id string) {
	t.Helper()
	select {
	case got := <-hints:
		if got != id {
			t.Fatalf("hint for %q, want %q", got, id)
		}
	case <-time.After(natstest.Within(5 * time.Second)):
		t.Fatalf("no hint for %q in time", id)
	}
}

// consumerSettled waits until the durable has nothing pending or unacked.
func consumerSettled(t *testing.T, js jetstream.JetStream) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	natstest.Eventually(t, 5*time.Second, func() bool {
		c, err := js.Consumer(context.Background(), "LLM_REQUESTS", "hintstream-requests")
		if err != nil {
			return false
		}
		info, err = c.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, "requests consumer settled")
	return info
}

func TestMalformedRequestTerminatedAndNextHinted(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	subj := streams.RequestSubject("m")
	f.publish(t, subj, wakeJSON(t, "good-1", "m", time.Now()), "")
	// A truncated msgpack request: a map header promising 3 entries.
	f.publish(t, subj, []byte{0x83, 0xaa, 'r', 'e', 'q'}, "application/msgpack")
	f.publish(t, subj, wakeJSON(t, "good-2", "m", time.Now()), "")
	expectHint(t, f.hints, "good-1")
	expectHint(t, f.hints, "good-2")

	info := consumerSettled(t, f.js)
	if info.NumRedelivered != 0 {
		t.Fatalf("%d redeliveries: the malformed request must be terminated, not retried", info.NumRedelivered)
	}
	if got := f.counters.RequestsMalformed.Value("truncated msgpack"); got != 1 {
		t.Fatalf("malformed counted %d times", got)
	}
	s, _ := f.js.Stream(context.Background(), "HINTSTREAM_DLQ")
	m, err := s.GetLastMsgForSubject(context.Background(), "hintstream.dlq.requests")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(HeaderDLQReason) != "truncated msgpack" || m.Header.Get(HeaderDLQSeq) != "2" ||
		m.Header.Get("Content-Type") != "application/msgpack" || len(m.Data) != 5 {
		t.Fatalf("dead-letter copy: headers %v data %x", m.Header, m.Data)
	}
}

// Without a stored dead-letter copy the original must not be terminated:
// it is nak'ed and comes back until the copy can be made.
func TestMalformedRequestKeptUntilDeadLettered(t *testing.T) {
	set := streams.DefaultSet()
	dlqCfg := set.DeadLetter
	set.DeadLetter.Name = "" // no stream captures hintstream.dlq.> yet
	f := setup(t, set)
	f.publish(t, streams.RequestSubject("m"), []byte(`{"session_id":"no id"}`), "")
	natstest.Eventually(t, 10*time.Second, func() bool { return f.counters.RequestsReceived.Value() >= 2 },
		"the malformed request to be redelivered while the dead-letter copy fails")
	if _, _, err := streams.Ensure(context.Background(), f.js, dlqCfg); err != nil {
		t.Fatal(err)
	}
	consumerSettled(t, f.js)
	s, _ := f.js.Stream(context.Background(), dlqCfg.Name)
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("dead-letter stream holds %d copies, want 1", info.State.Msgs)
	}
}

func TestExpiredAndUnservedWakeupsAckedWithoutHint(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	subj := streams.RequestSubject("m")
	f.publish(t, subj, wakeJSON(t, "stale", "m", time.Now().Add(-time.Minute)), "")
	f.publish(t, subj, wakeJSON(t, "other-model", "nobody-serves-this", time.Now()), "")
	plain, _ := json.Marshal(schemas.RequestEvent{RequestID: "plain", Model: "m"})
	f.publish(t, subj, plain, "")
	f.publish(t, subj, wakeJSON(t, "fresh", "m", time.Now()), "")
	expectHint(t, f.hints, "fresh") // the earlier three produced nothing
	consumerSettled(t, f.js)
	for name, want := range map[string]uint64{
		"hintstream_hints_prefetch_skipped_total|expired": 1, "hintstream_hints_prefetch_skipped_total|no_worker": 1,
		"hintstream_requests_plain_total": 1, "hintstream_hints_prefetch_queued_total": 1,
	} {
		if got := metricstest.Get(f.counters, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestMalformedKVEventSkippedAndDeadLettered(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	f.publish(t, streams.KVEventSubject(1), []byte(`{"worker_id":1,"event":{"event_id":1,"data":{"moved":{}}}}`), "")
	local := kvevents.LocalBlockHashes(make([]uint32, 16), 16)
	good, _ := json.Marshal(schemas.RouterEvent{WorkerID: 1, Event: schemas.KvCacheEvent{EventID: 2,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{
			Blocks: []schemas.StoredBlock{{BlockHash: 77, TokensHash: schemas.BlockHash(local[0])}}}}}})
	f.publish(t, streams.KVEventSubject(1), good, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.kv.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ov := f.index.Overlap(kvevents.PromptHashes(make([]uint32, 16), 16)); ov[kvevents.WorkerKey{WorkerID: 1}] != 1 {
		t.Fatalf("the good event after the bad one was not applied: %v", ov)
	}
	if f.counters.KVEventsMalformed.Total() != 1 {
		t.Fatalf("kv_events.malformed = %d", f.counters.KVEventsMalformed.Total())
	}
	s, _ := f.js.Stream(context.Background(), "HINTSTREAM_DLQ")
	if _, err := s.GetLastMsgForSubject(context.Background(), "hintstream.dlq.kv_events"); err != nil {
		t.Fatalf("no dead-letter copy of the bad KV event: %v", err)
	}
}

// engineBatch builds a vLLM tagged-map EventBatch storing the full blocks
// of tokens (block size 16) under engine hashes base+i.
func engineBatch(tokens []uint32, base int64) []byte {
	n := len(tokens) / 16
	b := msgp.AppendMapHeader(nil, 3)
	b = msgp.AppendString(b, "ts")
	b = msgp.AppendFloat64(b, 1.5)
	b = msgp.AppendString(b, "events")
	b = msgp.AppendArrayHeader(b, 1)
	b = msgp.AppendMapHeader(b, 5)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "BlockStored")
	b = msgp.AppendString(b, "block_hashes")
	b = msgp.AppendArrayHeader(b, uint32(n))
	for i := 0; i < n; i++ {
		b = msgp.AppendInt64(b, base+int64(i))
	}
	b = msgp.AppendString(b, "parent_block_hash")
	b = msgp.AppendNil(b)
	b = msgp.AppendString(b, "token_ids")
	b = msgp.AppendArrayHeader(b, uint32(len(tokens)))
	for _, t := range tokens {
		b = msgp.AppendUint32(b, t)
	}
	b = msgp.AppendString(b, "block_size")
	b = msgp.AppendInt(b, 16)
	b = msgp.AppendString(b, "data_parallel_rank")
	return msgp.AppendNil(b)
}

// A new engine incarnation reported by the bridge means an empty cache.
func TestEngineRestartClearsWorker(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	tokens := make([]uint32, 64)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	other := make([]uint32, 16)
	for i := range other {
		other[i] = uint32(1000 + i)
	}
	pub := func(data []byte, epoch, seq string) {
		m := nats.NewMsg(streams.KVEventSubject(9))
		m.Data = data
		m.Header.Set(schemas.HeaderBridgeEpoch, epoch)
		m.Header.Set(schemas.HeaderBridgeSeq, seq)
		if _, err := f.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.kv.WaitCaughtUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	overlap := func() int {
		return f.index.Overlap(kvevents.PromptHashes(tokens, 16))[kvevents.WorkerKey{WorkerID: 9}]
	}
	pub(engineBatch(tokens, 100), "1000", "0")
	caughtUp()
	if got := overlap(); got != 4 {
		t.Fatalf("overlap %d after the first batch, want 4", got)
	}
	pub(engineBatch(other, 200), "1000", "1") // same incarnation: blocks stay
	caughtUp()
	if got := overlap(); got != 4 {
		t.Fatalf("overlap %d after a batch of the same engine run, want 4", got)
	}
	pub(engineBatch(other, 300), "2000", "0") // engine restarted
	caughtUp()
	if got := overlap(); got != 0 {
		t.Fatalf("overlap %d after the engine restarted, want 0", got)
	}
	if f.counters.KVEventsEngineRestarts.Value() != 1 {
		t.Fatalf("engine_restarts = %d", f.counters.KVEventsEngineRestarts.Value())
	}
	pub(engineBatch(tokens, 400), "2000", "1") // the new run's next batch
	caughtUp()
	if st := f.index.Stats(); st.OutOfOrder != 0 || st.Gaps != 0 || st.StaleWorkers != 0 {
		t.Fatalf("the restarted engine's sequence read as disordered: %+v", st)
	}
	if got := overlap(); got != 4 {
		t.Fatalf("overlap %d after the new run stored the prompt, want 4", got)
	}
}

// A durable consumer deleted under a running instance is recreated and
// the next wake-up is still hinted, without a restart.
func TestDeletedConsumerRecreated(t *testing.T) {
	f := setup(t, streams.DefaultSet())
	subj := streams.RequestSubject("m")
	f.publish(t, subj, wakeJSON(t, "before", "m", time.Now()), "")
	expectHint(t, f.hints, "before")
	consumerSettled(t, f.js)
	if err := f.js.DeleteConsumer(context.Background(), "LLM_REQUESTS", "hintstream-requests"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return f.counters.RequestsConsumerRecreated.Value() == 1 },
		"the deleted consumer recreated")
	f.publish(t, subj, wakeJSON(t, "after", "m", time.Now()), "")
	expectHint(t, f.hints, "after")
}

// A message that keeps failing for a transient reason runs out of
// deliveries and is copied to the dead-letter subject, not lost.
func TestMaxDeliveriesDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	idx, err := pins.OpenRequestIndex(ctx, js, "", set.Requests.Name, time.Hour, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Without its bucket, indexing fails on every delivery.
	if err := js.DeleteKeyValue(ctx, pins.DefaultRequestIndexBucket); err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	eng := testEngine(t, engine.Decisions{}, engine.EngineDeps{Pins: &pins.Deps{Index: idx}, Counters: counters, Log: discard()})
	c := NewRequestConsumer(js, RequestConfig{Stream: set.Requests.Name, MaxDeliver: 2}, eng.Request,
		NewDeadLetter(js, ""), counters, discard())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	b, _ := json.Marshal(schemas.RequestEvent{RequestID: "doomed"})
	if _, err := js.Publish(ctx, streams.RequestSubject("m"), b); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 15*time.Second, func() bool {
		s, err := js.Stream(ctx, "HINTSTREAM_DLQ")
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(ctx, "hintstream.dlq.requests")
		return err == nil && m.Header.Get(HeaderDLQReason) == "max deliveries" && string(m.Data) == string(b)
	}, "the undeliverable request in the dead-letter stream")
	if counters.RequestsMaxDeliveries.Value() != 1 || counters.RequestsTransientErrors.Value() != 2 {
		t.Fatalf("counters %v", metricstest.Snapshot(counters, ""))
	}
}
