package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

// addRequestFrame is a KV router's AddRequest frame on the NATS event
// plane (an ActiveSequenceEvent in its envelope, published at), made by
// the independent Python builder (ingest/eventplane/testdata/dynamo_frames.py),
// which hashes tokens into the router's sequence hashes itself: its
// subject and bytes.
func addRequestFrame(t *testing.T, ns, comp, requestID string, worker uint64, tokens []uint32, sequence uint64, at time.Time) (string, []byte) {
	t.Helper()
	f := dynFrames(t, []map[string]any{{"kind": "sequence", "namespace": ns, "component": comp, "endpoint": "generate",
		"publisher": 1 << 45, "sequence": sequence, "published_at": at.UnixMilli(),
		"events": []map[string]any{{"op": "add", "request_id": requestID, "worker": worker, "router_id": 77,
			"tokens": tokens, "block_size": 16, "expected_output_tokens": 64}}}})[0]
	data, err := hex.DecodeString(f.Hex)
	if err != nil {
		t.Fatal(err)
	}
	return f.Subject, data
}

// payloadHashes reads a u64 list of a received hint's first payload.
func payloadHashes(t *testing.T, m pypeer.Received, field string) []uint64 {
	t.Helper()
	acts, _ := m.Envelope["actions"].([]any)
	if len(acts) == 0 {
		t.Fatalf("hint without actions: %+v", m.Envelope)
	}
	pl, _ := acts[0].(map[string]any)["payload"].(map[string]any)
	raw, _ := pl[field].([]any)
	out := make([]uint64, 0, len(raw))
	for _, v := range raw {
		var n uint64
		if _, err := fmt.Sscan(fmt.Sprint(v), &n); err != nil {
			t.Fatalf("%s: %v is not a u64", field, v)
		}
		out = append(out, n)
	}
	return out
}

// payloadField is a field of a received hint's first payload, as text.
func payloadField(m pypeer.Received, field string) string {
	acts, _ := m.Envelope["actions"].([]any)
	if len(acts) == 0 {
		return ""
	}
	pl, _ := acts[0].(map[string]any)["payload"].(map[string]any)
	return fmt.Sprint(pl[field])
}

// bySlot are the received pins of a slot.
func bySlot(ms []pypeer.Received, slot string) []pypeer.Received { return byPayload(ms, "slot", slot) }

// TestDynamoTrafficAlone: an unmodified Dynamo's traffic, and nothing of
// hintstream's own schema, makes hintstream prefetch and pin. On a real
// nats-server: two workers' KV events as Dynamo's NATS event plane
// carries them (core publishes of msgpack envelopes from the independent
// Python builder), a KV router's routing-time AddRequest (replica sync),
// and the frontend's request-trace records (trace's serde-faithful
// stand-in, published as the nats sink does). `run --source dynamo`
// reads them:
//
//   - the AddRequest for worker 101 prefetches its prompt to 101's hint
//     endpoint, naming the blocks by the engine hashes its KV events gave;
//   - the request_end ending in a tool call pins, at the pin endpoint, the
//     pages worker 101 reported for the record's sequence hashes (the
//     partial last block's hash dropped), with no token ids anywhere;
//   - the session's next request_end releases the pin (its request's
//     start as far as the trace tells it);
//   - a request_end and an AddRequest frame for a worker no registry knows
//     are counted by reason and dead-lettered, and hint nothing;
//   - records of another schema version, an unknown event type, a missing
//     field and a 10^6-hash prompt are counted by reason and dead-lettered;
//   - `whatif --trace` on the same records, as the file sink writes them,
//     prints its table.
func TestDynamoTrafficAlone(t *testing.T) {
	t.Parallel() // waits on processes more than it computes
	// A 10^6-hash record is some 20 MB of JSON: a server that carries it
	// (and its dead-letter copy), so that it is hintstream that refuses it.
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), MaxPayload: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	const ns, comp = "dyn-seq", "backend"
	dyn := []string{"--dynamo-namespace", ns, "--dynamo-component", comp, "--dynamo-active-sequences"}
	if out, errOut, code := streamsRun(t, srv.ClientURL(), append([]string{"create"}, dyn...)...); code != 0 {
		t.Fatalf("streams create: exit %d\n%s%s", code, out, errOut)
	}

	sink := pypeer.StartSink(t, 3) // workers 101 and 202, then the Mooncake master's pin socket
	eps := sink.Endpoints()
	kvb, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []uint64{101, 202} {
		rec := schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[i]}}
		if err := registry.Put(ctx, kvb, rec); err != nil {
			t.Fatal(err)
		}
	}

	// Worker 101 holds prompt A's 10 blocks, 202 prompt B's 6. The
	// builder's engine hashes are the local hashes xor 0x5A5A5A5A5A5A5A5A.
	promptA, promptB := seq(3000, 10*16+5), seq(5000, 6*16)
	engineHashes := func(tokens []uint32) []uint64 {
		var out []uint64
		for _, h := range kvevents.LocalBlockHashes(tokens, 16) {
			out = append(out, h^0x5A5A5A5A5A5A5A5A)
		}
		return out
	}
	frames := dynFrames(t, []map[string]any{
		{"kind": "kv", "namespace": ns, "component": comp, "worker": 101, "event_id": 1, "tier": "device",
			"tokens": promptA, "block_size": 16, "publisher": 1<<40 + 101, "sequence": 0},
		{"kind": "kv", "namespace": ns, "component": comp, "worker": 202, "event_id": 1, "tier": "device",
			"tokens": promptB, "block_size": 16, "publisher": 1<<40 + 202, "sequence": 0},
	})
	for _, f := range frames {
		data, _ := hex.DecodeString(f.Hex)
		if err := nc.Publish(f.Subject, data); err != nil { // core NATS, as Dynamo's NatsTransport
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json",
		"--http-addr", "127.0.0.1:0", "--source", "dynamo", "--pin-endpoint", eps[2]}, dyn...)...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	natstest.Eventually(t, 20*time.Second, func() bool {
		m := scrape(t, addr)
		return series(m, "hintstream_kv_events_applied_total", "kind", "stored") == 2
	}, "both workers' KV events applied")
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, err := js.StreamNameBySubject(ctx, dynamotrace.DefaultSubject)
		return err == nil
	}, "a stream capturing the request trace's subject")

	// The router books request r-A on worker 101 (replica sync).
	subj, frame := addRequestFrame(t, ns, comp, "r-A", 101, promptA, 0, time.Now())
	if err := nc.Publish(subj, frame); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, hasRequest("r-A"), "routing-time prefetch of r-A")
	pf := byRequest(sink.Messages(), "r-A")
	if len(pf) != 1 || pf[0].Endpoint != eps[0] || !pf[0].OK {
		t.Fatalf("prefetch of r-A: %+v, want one valid envelope at worker 101's endpoint %s", pf, eps[0])
	}
	if got, want := payloadHashes(t, pf[0], "block_hashes"), engineHashes(promptA[:160]); !slices.Equal(got, want) {
		t.Fatalf("prefetch names blocks %v, want worker 101's engine hashes %v", got, want)
	}
	if got := payloadHashes(t, pf[0], "token_ids"); len(got) != 0 {
		t.Fatalf("prefetch carries %d token ids; only hashes exist", len(got))
	}

	// The frontend traces r-A's end: a tool call on worker 101.
	turn := dynamotrace.Turn{RequestID: "r-A", Session: "sess-A", Trigger: "user_message", Model: model,
		Prompt: promptA, BlockSize: 16, Worker: 101, FinishReason: "tool_calls", ToolCalls: []string{"web_search"},
		ReceivedMs: uint64(time.Now().UnixMilli()), TotalMs: 400, OutputTokens: 30}
	records := []*dynamotrace.Record{turn.RequestEnd(),
		dynamotrace.Tool("tool_start", "sess-A", "call-1", "web_search", uint64(time.Now().UnixMilli()), 0)}
	for _, r := range records {
		if err := dynamotrace.Publish(ctx, js, dynamotrace.DefaultSubject, r); err != nil {
			t.Fatal(err)
		}
	}
	sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(bySlot(ms, "session:sess-A")) > 0 },
		"pin of sess-A")
	pins := bySlot(sink.Messages(), "session:sess-A")
	if len(pins) != 1 || pins[0].Endpoint != eps[2] || !pins[0].OK {
		t.Fatalf("pins of sess-A: %+v, want one valid envelope at the pin endpoint", pins)
	}
	// 10 full blocks: the record's 11th hash (5 tokens) is dropped.
	if got, want := payloadHashes(t, pins[0], "block_hashes"), engineHashes(promptA[:160]); !slices.Equal(got, want) {
		t.Fatalf("pin names blocks %v, want worker 101's engine hashes %v", got, want)
	}

	// The session's next turn (the tool's result) ends: its request_end
	// stands for its start too, so the pin is released.
	next := turn
	next.RequestID, next.Trigger, next.FinishReason, next.ToolCalls = "r-A2", "tool_result", "stop", nil
	next.Prompt, next.ReceivedMs = seq(3000, 12*16), uint64(time.Now().Add(time.Second).UnixMilli())
	if err := dynamotrace.Publish(ctx, js, dynamotrace.DefaultSubject, next.RequestEnd()); err != nil {
		t.Fatal(err)
	}
	sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(bySlot(ms, "session:sess-A")) == 2 },
		"release of sess-A's pin on its next turn")
	if rel := bySlot(sink.Messages(), "session:sess-A")[1]; !rel.OK || payloadField(rel, "ttl_ms") != "0" {
		t.Fatalf("second message of the slot: %+v, want a release (ttl_ms 0)", rel.Envelope)
	}

	// A worker nobody registered: the router's frame is counted and
	// dead-lettered, nothing sent (the request_end is among the bad
	// records below).
	ghostSubj, ghostFrame := addRequestFrame(t, ns, comp, "r-ghost", 999, promptB, 1, time.Now())
	if err := nc.Publish(ghostSubj, ghostFrame); err != nil {
		t.Fatal(err)
	}
	ghost := turn
	ghost.RequestID, ghost.Session, ghost.Worker = "r-ghost", "sess-ghost", 999
	ghostRec, err := dynamotrace.Marshal(ghost.RequestEnd())
	if err != nil {
		t.Fatal(err)
	}

	// Records that can never be processed, each with its reason.
	good, err := dynamotrace.Marshal(turn.RequestEnd())
	if err != nil {
		t.Fatal(err)
	}
	huge := turn
	huge.RequestID, huge.Prompt, huge.BlockSize = "r-huge", seq(1, 1_000_000), 1
	hugeRec, err := dynamotrace.Marshal(huge.RequestEnd())
	if err != nil {
		t.Fatal(err)
	}
	// Past the decoder's 16 MiB a record is refused whole, before its
	// hashes are counted.
	hugeReason := "too many sequence hashes"
	if len(hugeRec) > 16<<20 {
		hugeReason = "record too large"
	}
	bad := map[string][]byte{
		"unsupported schema": bytes.Replace(good, []byte("trace.v1"), []byte("trace.v2"), 1),
		"unknown event_type": bytes.Replace(good, []byte(`"request_end"`), []byte(`"request_begin"`), 1),
		"missing request":    bytes.Replace(good, []byte(`"request":`), []byte(`"requestx":`), 1),
		hugeReason:           hugeRec,
		"unknown worker":     ghostRec,
	}
	for _, b := range bad {
		if _, err := js.Publish(ctx, dynamotrace.DefaultSubject, b); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		m := scrape(t, addr)
		for reason := range bad {
			if series(m, "hintstream_request_trace_malformed_total", "reason", reason) != 1 {
				return false
			}
		}
		return series(m, "hintstream_hints_prefetch_skipped_total", "reason", "unknown_worker") == 1
	}, "bad records counted by reason, the unknown worker's prefetch skipped")
	natstest.Eventually(t, 10*time.Second, func() bool {
		s, err := js.Stream(ctx, "HINTSTREAM_DLQ")
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "hintstream.dlq.requests")
		return err == nil
	}, "dead-letter copy of the unknown worker's AddRequest frame")
	if m := lastMsg(t, ctx, js, "HINTSTREAM_DLQ", "hintstream.dlq.requests"); m.Header.Get("Hintstream-Error") != "unknown worker" ||
		!bytes.Equal(m.Data, ghostFrame) || m.Header.Get("Hintstream-Subject") != ghostSubj {
		t.Fatalf("dead letter of the AddRequest frame: reason %q, subject %q", m.Header.Get("Hintstream-Error"), m.Header.Get("Hintstream-Subject"))
	}
	dlqStream, err := js.Stream(ctx, "HINTSTREAM_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := dlqStream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: "hintstream.dlq.request_trace"})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := dlq.Fetch(len(bad), jetstream.FetchMaxWait(natstest.Within(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for msg := range batch.Messages() {
		reason := msg.Headers().Get("Hintstream-Error")
		if want, ok := bad[reason]; !ok || !bytes.Equal(want, msg.Data()) {
			t.Errorf("dead letter with reason %q: %.80s", reason, msg.Data())
		}
		seen[reason] = true
	}
	if len(seen) != len(bad) {
		t.Fatalf("dead letters for %v, want one for each of %d reasons", seen, len(bad))
	}
	if n := len(sink.Messages()); n != 3 {
		t.Errorf("%d hints received, want the prefetch, the pin and its release only", n)
	}
	p.stop(t)

	// The same traffic, as the file sink writes it, through whatif.
	file := filepath.Join(t.TempDir(), "request_trace.jsonl")
	var recs []*dynamotrace.Record
	base := uint64(time.Now().Add(-time.Hour).UnixMilli())
	for i := range 6 {
		tr := turn
		tr.RequestID, tr.ReceivedMs = fmt.Sprintf("w-%d", i), base+uint64(i)*20_000
		tr.Prompt = seq(3000, 10*16+5+i*40) // each turn extends the last
		if i%2 == 1 {
			tr.Trigger, tr.FinishReason, tr.ToolCalls = "tool_result", "stop", nil
		}
		recs = append(recs, tr.RequestEnd())
	}
	if err := dynamotrace.WriteFile(file, false, 0, recs); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "whatif", "--trace", file).CombinedOutput()
	if err != nil {
		t.Fatalf("whatif --trace on request-trace records: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "prefill saved") || !strings.Contains(string(out), "today's") {
		t.Fatalf("whatif printed no table:\n%s", out)
	}
}
