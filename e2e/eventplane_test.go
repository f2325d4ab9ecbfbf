package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

// dynFrames builds event-plane frames with the independent Python builder
// (eventplane/testdata/dynamo_frames.py): subject and bytes of each.
func dynFrames(t *testing.T, specs []map[string]any) []struct{ Subject, Hex string } {
	t.Helper()
	in, _ := json.Marshal(specs)
	cmd := exec.Command(pypeer.Python(), "../ingest/eventplane/testdata/dynamo_frames.py", "frames")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("frame builder: %v: %s", err, stderr.String())
	}
	var frames []struct{ Subject, Hex string }
	if err := json.Unmarshal(out, &frames); err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestDynamoEventPlane is issue 13's point 4 end to end. Three workers
// publish KV events and load as Dynamo's event plane does over NATS:
// plain core publishes (nc.Publish, no JetStream on their side) of
// msgpack EventEnvelopes, built by the independent Python builder.
// `streams create --dynamo-namespace --dynamo-component` makes JetStream
// keep them, `run` with the same flags reads them, and each wake-up goes
// to the worker the cost model picks. Loads (kv_metrics, endpoint
// "generate"): w101 decode 1, w202 none, w303 decode 4.
//
// A: prompt of 10 device blocks, no LoRA. Device overlaps 2, 5, 7:
//
//	w101 (10-2) + 1 = 9,  w202 (10-5) + 0 = 5 ← chosen,  w303 (10-7) + 4 = 7
//
// B: prompt of 195 tokens (12 full blocks, 12.19 to prefill) with
// lora_name "sql-adapter". w101 holds all 12 on device, hashed without the
// adapter; w202 holds 4 with it on device; w303 holds 2 with it on device
// and all 12 in host memory (10 past the device prefix):
//
//	device only, adapter ignored:  w101 12.19-12+1 = 1.19 ← wrong
//	device only, adapter hashed:   w101 13.19, w202 8.19 ← wrong, w303 14.19
//	tiers (host 0.75), hashed:     w303 12.19-(2+0.75·10)+4 = 6.69 ← Dynamo's pick
//
// (Dynamo adds the request's own blocks to every worker's decode load; the
// same for all, it does not move the minimum.) Then a frame that is no
// envelope is dead-lettered with its reason and counted, and a skipped
// sequence of w202's publisher is an index gap.
func TestDynamoEventPlane(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	const ns, comp = "dyn-e2e", "vllm.worker" // a '.' to exercise Dynamo's segment encoding
	dyn := []string{"--dynamo-namespace", ns, "--dynamo-component", comp}

	out, errOut, code := streamsRun(t, srv.ClientURL(), append([]string{"create"}, dyn...)...)
	if code != 0 {
		t.Fatalf("streams create: exit %d\n%s%s", code, out, errOut)
	}
	kvSubj := "namespace.dyn-e2e.component.vllm%2Eworker.kv-events"
	for stream, want := range map[string]string{"KV_EVENTS": kvSubj,
		"KV_LOAD": "namespace.dyn-e2e.component.vllm%2Eworker.endpoint.*.kv_metrics"} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if subj := s.CachedInfo().Config.Subjects; !slices.Contains(subj, want) {
			t.Fatalf("%s captures %q, want %q among them", stream, subj, want)
		}
	}

	sink := pypeer.StartSink(t, 3)
	eps := sink.Endpoints()
	workers := []uint64{101, 202, 303}
	kvb, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range workers {
		rec := schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[i]}}
		if err := registry.Put(ctx, kvb, rec); err != nil {
			t.Fatal(err)
		}
	}

	promptA, promptB := seq(7000, 10*16), seq(9000, 12*16+3)
	const lora = "sql-adapter"
	pub := map[uint64]int{101: 0, 202: 0, 303: 0} // next sequence of each worker's KV publisher
	kvFrame := func(w uint64, tier string, tokens []uint32, loraName string) map[string]any {
		sp := map[string]any{"kind": "kv", "namespace": ns, "component": comp, "worker": w,
			"event_id": pub[w] + 1, "tier": tier, "tokens": tokens, "block_size": 16,
			"publisher": 1<<40 + w, "sequence": pub[w]}
		if loraName != "" {
			sp["lora"] = loraName
		}
		pub[w]++
		return sp
	}
	loadFrame := func(w uint64, decode int) map[string]any {
		return map[string]any{"kind": "load", "namespace": ns, "component": comp, "endpoint": "generate",
			"worker": w, "decode": decode, "used": 100, "publisher": 1<<41 + w, "sequence": 0}
	}
	specs := []map[string]any{
		kvFrame(101, "device", promptA[:2*16], ""),
		kvFrame(202, "device", promptA[:5*16], ""),
		kvFrame(303, "device", promptA[:7*16], ""),
		kvFrame(101, "device", promptB[:12*16], ""),
		kvFrame(202, "device", promptB[:4*16], lora),
		kvFrame(303, "device", promptB[:2*16], lora),
		kvFrame(303, "host_pinned", promptB[:12*16], lora),
		loadFrame(101, 1), loadFrame(303, 4),
	}
	frames := dynFrames(t, specs)
	for _, f := range frames {
		data, err := hex.DecodeString(f.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(f.Subject, data); err != nil { // core NATS, as Dynamo's NatsTransport
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	stored := func(stream string) uint64 {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return 0
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return stored("KV_EVENTS") == 7 && stored("KV_LOAD") == 2 },
		"JetStream stored the core publishes")

	live := filepath.Join(t.TempDir(), "live.jsonl")
	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json",
		"--http-addr", "127.0.0.1:0", "--hints-log", live}, dyn...)...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	since := time.Now().Add(-time.Millisecond)

	publishRequest(t, ctx, js, wake("wake-A", "sess-A", promptA))
	sink.WaitFor(t, 5*time.Second, hasRequest("wake-A"), "prefetch for wake-A")
	hinted := func(id string) []uint64 {
		var ws []uint64
		for _, m := range byRequest(sink.Messages(), id) {
			ws = append(ws, workers[slices.Index(eps, m.Endpoint)])
		}
		return ws
	}
	// The reference model of Dynamo's router (internal/pypeer/dynamo_cost.py)
	// picks from the same scenario; the hand arithmetic above says which.
	loadOf := map[uint64]*pypeer.CostLoad{101: {ActiveDecodeBlocks: 1}, 303: {ActiveDecodeBlocks: 4}}
	ref := pypeer.RunCostReference(t, []pypeer.CostCase{
		{BlockSize: 16, Tokens: promptA, Workers: []pypeer.CostWorker{
			{WorkerID: 101, Load: loadOf[101], Stores: []pypeer.CostStore{{Tier: "device", To: 2}}},
			{WorkerID: 202, Stores: []pypeer.CostStore{{Tier: "device", To: 5}}},
			{WorkerID: 303, Load: loadOf[303], Stores: []pypeer.CostStore{{Tier: "device", To: 7}}},
		}},
		{BlockSize: 16, Tokens: promptB, LoraName: lora, Workers: []pypeer.CostWorker{
			{WorkerID: 101, Load: loadOf[101], Stores: []pypeer.CostStore{{Tier: "device", To: 12}}},
			{WorkerID: 202, Stores: []pypeer.CostStore{{Tier: "device", To: 4, LoraName: lora}}},
			{WorkerID: 303, Load: loadOf[303], Stores: []pypeer.CostStore{{Tier: "device", To: 2, LoraName: lora},
				{Tier: "host_pinned", To: 12, LoraName: lora}}},
		}},
	})
	for i, want := range []uint64{202, 303} {
		if r := ref[i]; r.None || r.Ties != 1 || r.WorkerID != want {
			t.Fatalf("reference model on case %c: %+v, want worker %d alone (the scenario is off)", 'A'+i, r, want)
		}
	}
	if got := hinted("wake-A"); !slices.Equal(got, []uint64{ref[0].WorkerID}) {
		t.Fatalf("wake-A hinted workers %v, want [%d] (the reference model's pick)", got, ref[0].WorkerID)
	}
	wb := wake("wake-B", "sess-B", promptB)
	wb.LoraName = lora
	publishRequest(t, ctx, js, wb)
	sink.WaitFor(t, 5*time.Second, hasRequest("wake-B"), "prefetch for wake-B")
	if got := hinted("wake-B"); !slices.Equal(got, []uint64{ref[1].WorkerID}) {
		t.Fatalf("wake-B hinted workers %v, want [%d] (the reference model's pick: tiers and the adapter's hash count)", got, ref[1].WorkerID)
	}

	// A frame that is not an envelope: dead-lettered with its reason.
	if err := nc.Publish(kvSubj, []byte("not an envelope")); err != nil {
		t.Fatal(err)
	}
	// w202's publisher skips sequence 2: an index gap, the pair stale.
	pub[202]++
	gap := dynFrames(t, []map[string]any{kvFrame(202, "device", promptA[:16], "")})[0]
	data, _ := hex.DecodeString(gap.Hex)
	if err := nc.Publish(gap.Subject, data); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		s, err := js.Stream(ctx, "HINTSTREAM_DLQ")
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "hintstream.dlq.kv_events")
		return err == nil
	}, "dead-letter copy of the bad frame")
	dlq := lastMsg(t, ctx, js, "HINTSTREAM_DLQ", "hintstream.dlq.kv_events")
	if r := dlq.Header.Get("Hintstream-Error"); r != "envelope not a msgpack map" {
		t.Fatalf("dead-letter reason %q", r)
	}
	if string(dlq.Data) != "not an envelope" || dlq.Header.Get("Hintstream-Subject") != kvSubj {
		t.Fatalf("dead-letter copy %q from %q", dlq.Data, dlq.Header.Get("Hintstream-Subject"))
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		m := scrape(t, addr)
		return series(m, "hintstream_index_gaps_total") == 1 && series(m, "hintstream_index_stale_workers") == 1
	}, "the skipped sequence counted as a gap")

	p.stop(t)
	// replay with the same flags reads the same frames and makes the same
	// choices.
	dry := filepath.Join(t.TempDir(), "replay.jsonl")
	if out, err := exec.Command(binary, append([]string{"replay", "--nats-url", srv.ClientURL(), "--since",
		since.Format(time.RFC3339Nano), "--dry-run", "--out", dry}, dyn...)...).CombinedOutput(); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if want, got := hintLines(t, live), hintLines(t, dry); len(want) != 2 || !slices.Equal(want, got) {
		t.Fatalf("replay differs from the live run\nlive:\n%s\nreplay:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	counters := finalCounters(t, p)
	for name, want := range map[string]float64{
		"hintstream_kv_events_applied_total|stored": 8, "hintstream_kv_events_malformed_total|envelope not a msgpack map": 1, "hintstream_hints_prefetch_queued_total": 2,
	} {
		if counters[name] != want {
			t.Errorf("counter %s = %v, want %v (all: %v)", name, counters[name], want, counters)
		}
	}
}
