package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pyEncode is an independent msgpack encoder for engine batches and load:
// it builds vLLM's tagged-map form, vLLM's array form or SGLang's array
// form (no medium) from a JSON description.
const pyEncode = `
import sys, json, msgpack
spec = json.load(sys.stdin)
if spec["form"] == "load":
    sys.stdout.buffer.write(msgpack.packb(spec["load"])); sys.exit(0)
evs = []
for e in spec["events"]:
    if spec["form"] == "map":
        evs.append(e)
    elif e["type"] == "BlockStored":
        f = ["BlockStored", e["block_hashes"], e["parent_block_hash"], e["token_ids"], e["block_size"], None]
        if spec["form"] == "vllm_array":
            f.append(e.get("medium"))
        evs.append(f)
    else:
        evs.append([e["type"], e["block_hashes"]])
if spec["form"] == "map":
    batch = {"ts": 1764460800.25, "events": evs, "data_parallel_rank": spec["dp"]}
else:
    batch = [1764460800.25, evs, spec["dp"]]
sys.stdout.buffer.write(msgpack.packb(batch))
`

func pyMsgpack(t *testing.T, spec any) []byte {
	t.Helper()
	in, _ := json.Marshal(spec)
	cmd := exec.Command(pypeer.Python(), "-c", pyEncode)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python encoder: %v: %s", err, stderr.String())
	}
	return out
}

func stored(hashes []int64, parent *int64, tokens []uint32) map[string]any {
	return map[string]any{"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
		"token_ids": tokens, "block_size": 16, "lora_id": nil, "medium": "GPU", "lora_name": nil}
}

// TestThreeFormatsAndLoadDecideTheWorker: KV events in Dynamo JSON (worker
// 1), vLLM tagged-map msgpack (worker 2, dp rank 1) and SGLang array
// msgpack (worker 3), plus load in JSON and msgpack, make a wake-up go to
// the worker Dynamo's cost formula predicts (weight 1, temperature 0):
//
//	prompt 160 tokens = 10 blocks of 16
//	w1    overlap 8, decode 20: prefill (160-128)/16 = 2 → logit 2+20 = 22
//	w2/1  overlap 6, decode  2: prefill (160- 96)/16 = 4 → logit 4+2  =  6  ← minimum
//	w2/0  overlap 0, decode  0: prefill 10            → logit 10
//	w3    overlap 3, decode  0: prefill (160- 48)/16 = 7 → logit 7
//
// (Dynamo adds the request's own 10 blocks to every candidate's decode
// load; a constant for all, it does not move the minimum.) Longest overlap alone
// would pick w1, least load alone w2/0 or w3.
func TestThreeFormatsAndLoadDecideTheWorker(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := pypeer.StartSink(t, 4)
	eps := sink.Endpoints()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []schemas.WorkerRecord{
		{WorkerID: 1, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[0]}},
		{WorkerID: 2, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[1], eps[2]}},
		{WorkerID: 3, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[3]}},
	} {
		if err := registry.Put(ctx, kv, rec); err != nil {
			t.Fatal(err)
		}
	}
	prompt := seq(7000, 160)

	// Worker 1: Dynamo RouterEvent JSON, 8 blocks.
	publishStored(t, ctx, js, 1, prompt[:8*16])
	// Worker 2, dp rank 1: vLLM tagged maps, 4 blocks then 2 chained on.
	p4 := int64(-4)
	publishRaw(t, ctx, js, streams.KVEventSubject(2), pyMsgpack(t, map[string]any{"form": "map", "dp": 1,
		"events": []any{stored([]int64{-1, -2, -3, -4}, nil, prompt[:64])}}))
	publishRaw(t, ctx, js, streams.KVEventSubject(2), pyMsgpack(t, map[string]any{"form": "map", "dp": 1,
		"events": []any{stored([]int64{-5, -6}, &p4, prompt[64:96])}}))
	// Worker 3: SGLang array form (no medium), 3 blocks, negative int64 page hashes.
	publishRaw(t, ctx, js, streams.KVEventSubject(3), pyMsgpack(t, map[string]any{"form": "sglang_array", "dp": 0,
		"events": []any{stored([]int64{-8070450532247928832, 42, 9223372036854775807}, nil, prompt[:48])}}))
	// Load: worker 1 in msgpack, worker 2 dp 1 in JSON.
	publishRaw(t, ctx, js, streams.LoadSubject(1), pyMsgpack(t, map[string]any{"form": "load",
		"load": map[string]any{"worker_id": 1, "dp_rank": 0, "active_decode_blocks": 20, "active_prefill_tokens": nil, "kv_used_blocks": 100}}))
	two := uint64(2)
	publishJSON(t, ctx, js, streams.LoadSubject(2), schemas.ActiveLoad{WorkerID: 2, DpRank: 1, ActiveDecodeBlocks: &two})

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	p.waitLine(t, 30*time.Second, "hintstream running")
	publishRequest(t, ctx, js, wake("fmt-1", "s-fmt", prompt))
	sink.WaitFor(t, 2*time.Second, hasRequest("fmt-1"), "prefetch for fmt-1")
	m := byRequest(sink.Messages(), "fmt-1")[0]
	if !m.OK || m.Endpoint != eps[2] {
		t.Fatalf("fmt-1 went to %s (ok=%v %s), want worker 2 dp rank 1 at %s", m.Endpoint, m.OK, m.Error, eps[2])
	}
	pl := m.Envelope["actions"].([]any)[0].(map[string]any)["payload"].(map[string]any)
	if num(t, pl["dp_rank"]) != 1 {
		t.Fatalf("payload dp_rank %v, want 1", pl["dp_rank"])
	}
	p.stop(t)
	c := finalCounters(t, p)
	if c["hintstream_kv_events_malformed_total"] != 0 || c["hintstream_load_malformed_total"] != 0 || c["hintstream_kv_events_unknown_parent_total"] != 0 {
		t.Fatalf("events were rejected: %v", c)
	}
	if c["hintstream_kv_events_applied_total|stored"] != 4 || c["hintstream_load_received_total"] != 2 {
		t.Fatalf("applied counters: %v", c)
	}
}

func publishRaw(t *testing.T, ctx context.Context, js jetstream.JetStream, subject string, data []byte) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set("Content-Type", "application/msgpack")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}
