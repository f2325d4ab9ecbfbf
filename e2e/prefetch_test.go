package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const model = "Qwen/Qwen3-8B"

// TestWakeupPrefetch is issue 2's end-to-end contract: three registered
// workers with different cached prefixes, one wake-up → exactly one
// kv.prefetch at the longest prefix, decoded by the independent peer; a
// plain request → no hint; a malformed request between two good ones →
// terminated, dead-lettered, counted, and the next one still hinted.
func TestWakeupPrefetch(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	sink := pypeer.StartSink(t, 3)
	eps := sink.Endpoints()

	// Prompt of 8 full blocks of 16 tokens plus a partial one.
	prompt := seq(5000, 8*16+5)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Worker 1 caches 2 blocks, worker 2 caches 6 and has half a block of
	// prefill in flight, worker 3 caches 4. Dynamo's cost (weight 1) for
	// wake-1 (133 tokens, 8 full blocks; decode = 8 new blocks for all):
	//   w1: (133-32+0)/16 + 8 = 14.3125
	//   w2: (133-96+8)/16 + 8 = 10.8125  ← minimum
	//   w3: (133-64+0)/16 + 8 = 12.3125
	cached := map[uint64]int{1: 2, 2: 6, 3: 4}
	for id := uint64(1); id <= 3; id++ {
		rec := schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[id-1]}}
		if err := registry.Put(ctx, kv, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	for id, n := range cached {
		publishStored(t, ctx, js, id, prompt[:n*16])
	}
	busy := uint64(8)
	publishJSON(t, ctx, js, streams.LoadSubject(2), schemas.ActiveLoad{WorkerID: 2, ActivePrefillTokens: &busy})

	// Watch for termination advisories before the consumer exists.
	terminated := make(chan string, 4)
	sub, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", func(m *nats.Msg) {
		var adv struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(m.Data, &adv)
		terminated <- adv.Reason
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--log-level", "debug")
	p.waitLine(t, 30*time.Second, "hintstream running")

	// 1. One wake-up: exactly one prefetch, at worker 2, within 2 s.
	sent := time.Now()
	publishRequest(t, ctx, js, wake("wake-1", "sess-1", prompt))
	sink.WaitFor(t, 2*time.Second, hasRequest("wake-1"), "prefetch for wake-1")
	got := byRequest(sink.Messages(), "wake-1")
	if len(got) != 1 {
		t.Fatalf("wake-1: %d hints, want exactly 1", len(got))
	}
	m := got[0]
	if !m.OK {
		t.Fatalf("peer rejected the envelope: %s", m.Error)
	}
	if m.Endpoint != eps[1] {
		t.Fatalf("wake-1 went to %s, want worker 2 at %s", m.Endpoint, eps[1])
	}
	checkEnvelope(t, m.Envelope, "wake-1", "sess-1", prompt, sent)

	// 2. A plain request gets no hint. Requests are consumed in order, so
	// once the wake-up after it is hinted, the plain one was handled.
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "plain-1", SessionID: "sess-1", Model: model, TokenIDs: prompt})
	publishRequest(t, ctx, js, wake("wake-2", "sess-2", prompt[:5*16]))
	sink.WaitFor(t, 2*time.Second, hasRequest("wake-2"), "prefetch for wake-2")
	if n := len(byRequest(sink.Messages(), "plain-1")); n != 0 {
		t.Fatalf("plain request got %d hints", n)
	}
	// wake-2 (80 tokens, 5 blocks): w1 (80-32)/16+5 = 8, w2 (80-80+8)/16+5
	// = 5.5, w3 (80-64)/16+5 = 6: worker 2.
	if ep := byRequest(sink.Messages(), "wake-2")[0].Endpoint; ep != eps[1] {
		t.Fatalf("wake-2 went to %s, want worker 2", ep)
	}

	// 3. good, malformed, good.
	publishRequest(t, ctx, js, wake("good-1", "sess-3", prompt[:3*16]))
	// By hand: the client refuses to publish an event without request_id.
	if _, err := js.Publish(ctx, streams.RequestSubject(model), []byte(`{"session_id":"no-request-id","headers":{"x-dynamo-experimental-wakeup":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	publishRequest(t, ctx, js, wake("good-2", "sess-4", prompt[:4*16]))
	sink.WaitFor(t, 2*time.Second, hasRequest("good-2"), "prefetch for the request after the malformed one")
	if len(byRequest(sink.Messages(), "good-1")) != 1 {
		t.Fatal("good-1 not hinted exactly once")
	}
	// good-1 (48 tokens, 3 blocks): workers 2 and 3 both cache all 3, and
	// worker 3 has no prefill in flight: w1 (48-32)/16+3 = 4, w2 8/16+3 =
	// 3.5, w3 0+3 = 3.
	if ep := byRequest(sink.Messages(), "good-1")[0].Endpoint; ep != eps[2] {
		t.Fatalf("good-1 went to %s, want worker 3 (equal overlap, no prefill in flight)", ep)
	}
	select {
	case r := <-terminated:
		if r != "missing request_id" {
			t.Fatalf("terminated with reason %q", r)
		}
	case <-time.After(natstest.Within(5 * time.Second)):
		t.Fatal("no termination advisory for the malformed request")
	}
	dlq := lastMsg(t, ctx, js, "HINTSTREAM_DLQ", "hintstream.dlq.requests")
	if r := dlq.Header.Get("Hintstream-Error"); r != "missing request_id" {
		t.Fatalf("dead-letter reason %q", r)
	}
	if !strings.Contains(string(dlq.Data), "no-request-id") {
		t.Fatalf("dead-letter copy lost the payload: %s", dlq.Data)
	}

	// Exactly the four wake-ups were hinted, each once, all decodable.
	p.stop(t)
	msgs := sink.Messages()
	if len(msgs) != 4 {
		t.Fatalf("peer received %d messages, want 4: %+v", len(msgs), msgs)
	}
	for _, m := range msgs {
		if !m.OK {
			t.Fatalf("peer rejected a message: %s", m.Error)
		}
	}
	counters := finalCounters(t, p)
	for name, want := range map[string]float64{
		"hintstream_requests_malformed_total": 1, "hintstream_requests_wakeup_total": 4, "hintstream_requests_plain_total": 1,
		"hintstream_hints_prefetch_queued_total": 4, "hintstream_requests_malformed_total|missing request_id": 1,
	} {
		if counters[name] != want {
			t.Errorf("counter %s = %v, want %v (all: %v)", name, counters[name], want, counters)
		}
	}
}

func checkEnvelope(t *testing.T, env map[string]any, reqID, session string, prompt []uint32, sent time.Time) {
	t.Helper()
	if env["protocol_version"] != "0.1" {
		t.Fatalf("protocol_version %v", env["protocol_version"])
	}
	if mid, _ := env["message_id"].(string); !strings.HasPrefix(mid, "wake-") {
		t.Fatalf("message_id %v", env["message_id"])
	}
	acts, _ := env["actions"].([]any)
	if len(acts) != 1 {
		t.Fatalf("actions: %v", env["actions"])
	}
	a := acts[0].(map[string]any)
	if a["action_type"] != "kv.prefetch" || a["action_version"] != "1.0" {
		t.Fatalf("action %v@%v", a["action_type"], a["action_version"])
	}
	pl := a["payload"].(map[string]any)
	if pl["request_id"] != reqID || pl["session_id"] != session || pl["model"] != model {
		t.Fatalf("payload ids: %v", pl)
	}
	toks, _ := pl["token_ids"].([]any)
	if len(toks) != len(prompt) {
		t.Fatalf("token_ids: %d, want %d", len(toks), len(prompt))
	}
	for i, v := range toks {
		if num(t, v) != int64(prompt[i]) {
			t.Fatalf("token_ids[%d] = %v, want %d", i, v, prompt[i])
		}
	}
	if num(t, pl["dp_rank"]) != 0 {
		t.Fatalf("dp_rank %v", pl["dp_rank"])
	}
	exp := time.UnixMilli(num(t, pl["expires_at_ms"]))
	if d := exp.Sub(sent); d < time.Second || d > 3*time.Second {
		t.Fatalf("expires_at_ms is %v after the wake-up was sent, want about 2s", d)
	}
}

// num reads an integer the peer decoded (a json.Number).
func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v is not an integer: %v", v, err)
	}
	return i
}

func wake(id, session string, prompt []uint32) schemas.RequestEvent {
	return schemas.RequestEvent{RequestID: id, SessionID: session, Model: model, TokenIDs: prompt,
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}, ReceivedAtMs: time.Now().UnixMilli()}
}

func hasRequest(id string) func([]pypeer.Received) bool {
	return func(ms []pypeer.Received) bool { return len(byRequest(ms, id)) > 0 }
}

func byRequest(ms []pypeer.Received, id string) []pypeer.Received {
	return byPayload(ms, "request_id", id)
}

// byPayload are the received hints with an action whose payload has
// field set to value.
func byPayload(ms []pypeer.Received, field, value string) []pypeer.Received {
	var out []pypeer.Received
	for _, m := range ms {
		acts, _ := m.Envelope["actions"].([]any)
		for _, a := range acts {
			pl, _ := a.(map[string]any)["payload"].(map[string]any)
			if pl[field] == value {
				out = append(out, m)
			}
		}
	}
	return out
}

func publishJSON(t *testing.T, ctx context.Context, js jetstream.JetStream, subject string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject, b); err != nil {
		t.Fatal(err)
	}
}

// publishStored announces that worker caches the full blocks of tokens,
// as a Dynamo RouterEvent with engine hashes unrelated to Dynamo's own.
func publishStored(t *testing.T, ctx context.Context, js jetstream.JetStream, worker uint64, tokens []uint32) {
	t.Helper()
	publishStoredLocal(t, ctx, js, worker, kvevents.LocalBlockHashes(tokens, 16))
}

func lastMsg(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("no message on %s: %v", subject, err)
	}
	return m
}

// finalCounters reads the counters hintstream logs when it stops, keyed
// by their exposed names ("hintstream_requests_wakeup_total",
// "hintstream_hints_prefetch_skipped_total|no_worker" and the family total
// "hintstream_hints_prefetch_skipped_total"), as metrics' Summary keys
// them; the line names them without the prefix (metrics' LogAttrs).
func finalCounters(t *testing.T, p *proc) map[string]float64 {
	t.Helper()
	keys := map[string]string{} // exposed name without the prefix -> exposed name
	fams := metrics.New()
	for _, name := range fams.Names() {
		keys[strings.TrimPrefix(name, "hintstream_")] = name
	}
	for _, l := range p.lines(&p.errs) {
		var rec struct {
			Msg      string                     `json:"msg"`
			Counters map[string]json.RawMessage `json:"counters"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil || rec.Msg != "stopped" {
			continue
		}
		out := map[string]float64{}
		for name, raw := range rec.Counters {
			if name == strings.TrimPrefix(fams.ToolExpected.Name(), "hintstream_") {
				continue // expected times, as duration strings
			}
			key, ok := keys[name]
			if !ok {
				t.Fatalf("stopped line names %q, which is no counter", name)
			}
			var v float64
			if json.Unmarshal(raw, &v) == nil {
				out[key] = v
				continue
			}
			var byLabel map[string]float64
			if err := json.Unmarshal(raw, &byLabel); err != nil {
				t.Fatalf("stopped line: counter %s: %v", name, err)
			}
			for lv, n := range byLabel {
				out[key+"|"+lv] = n
				out[key] += n
			}
		}
		return out
	}
	t.Fatal("no final counters in hintstream's log")
	return nil
}

func seq(base uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}
