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
	"github.com/nats-io/nats.go/jetstream"
)

// pyTokensHash computes Dynamo's local block hashes with the salted block
// seed, independently of the Go code (python3-xxhash).
const pyTokensHash = `
import sys, json, struct, xxhash
s = json.load(sys.stdin)
seed = 1337
if s["lora"]: seed = (seed + xxhash.xxh3_64_intdigest(s["lora"].encode(), seed=0)) % 2**64
if s["salt"]: seed = (seed + xxhash.xxh3_64_intdigest(s["salt"].encode(), seed=1)) % 2**64
t, bs = s["tokens"], s["bs"]
print(json.dumps([xxhash.xxh3_64_intdigest(struct.pack("<%dI" % bs, *t[i:i+bs]), seed=seed) for i in range(0, len(t) - bs + 1, bs)]))
`

// publishStoredLocal announces that worker caches blocks whose Dynamo
// local hashes (tokens_hash) are local, as a RouterEvent from the root
// with engine hashes unrelated to Dynamo's own.
func publishStoredLocal(t *testing.T, ctx context.Context, js jetstream.JetStream, worker uint64, local []uint64) {
	t.Helper()
	blocks := make([]schemas.StoredBlock, len(local))
	for i, h := range local {
		blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(worker<<32 | uint64(i+1)), TokensHash: schemas.BlockHash(h)}
	}
	publishJSON(t, ctx, js, streams.KVEventSubject(worker), schemas.RouterEvent{WorkerID: worker,
		Event: schemas.KvCacheEvent{EventID: 1, Data: schemas.KvCacheEventData{Kind: schemas.KindStored,
			Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}})
}

func pyLocalHashes(t *testing.T, tokens []uint32, lora, salt string) []uint64 {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"tokens": tokens, "bs": 16, "lora": lora, "salt": salt})
	cmd := exec.Command(pypeer.Python(), "-c", pyTokensHash)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python hasher: %v: %s", err, stderr.String())
	}
	var hs []uint64
	if err := json.Unmarshal(out, &hs); err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestTiersAndLoraDecideTheWorker: a wake-up naming LoRA adapter-a goes
// to the worker today's Dynamo router picks, as the reference model
// (internal/pypeer/dynamo_cost.py) computes it. Each of the three ways
// hintstream used to break picks a different worker:
//
//	prompt 160 tokens = 10 blocks of 16; no load; Dynamo's default weights
//	w1  vLLM msgpack, adapter-a: 2 blocks on GPU, 6 more on CPU (host_pinned)
//	    credit 2 + 0.75*6 = 6.5 → cost 10 - 6.5 + 10 = 13.5   ← chosen
//	w2  RouterEvent JSON, 6 device blocks hashed without the adapter
//	    no match for an adapter-a request → cost 20 (unsalted hashing: 14)
//	w3  RouterEvent JSON, adapter-a: 4 device blocks → cost 16
//	    (device-only credit would pick it)
func TestTiersAndLoraDecideTheWorker(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := pypeer.StartSink(t, 3)
	eps := sink.Endpoints()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []uint64{1, 2, 3} {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	const lora = "adapter-a"
	prompt := seq(9000, 160)

	// w1: vLLM tagged maps naming the adapter; hintstream hashes the tokens.
	vllm := func(hashes []int64, parent *int64, tokens []uint32, medium string) map[string]any {
		e := stored(hashes, parent, tokens)
		e["medium"], e["lora_name"] = medium, lora
		return e
	}
	p2 := int64(-2)
	publishRaw(t, ctx, js, streams.KVEventSubject(1), pyMsgpack(t, map[string]any{"form": "map", "dp": 0, "events": []any{
		vllm([]int64{-1, -2}, nil, prompt[:32], "GPU"),
		vllm([]int64{-3, -4, -5, -6, -7, -8}, &p2, prompt[32:128], "CPU"),
	}}))
	// w2 and w3: RouterEvent JSON whose tokens_hash Python computed.
	publishStoredLocal(t, ctx, js, 2, pyLocalHashes(t, prompt[:96], "", ""))
	publishStoredLocal(t, ctx, js, 3, pyLocalHashes(t, prompt[:64], lora, ""))

	ref := pypeer.RunCostReference(t, []pypeer.CostCase{{BlockSize: 16, Tokens: prompt, LoraName: lora,
		Workers: []pypeer.CostWorker{
			{WorkerID: 1, ExtBase: 100, Stores: []pypeer.CostStore{{Tier: "device", From: 0, To: 2, LoraName: lora},
				{Tier: "host_pinned", From: 2, To: 8, LoraName: lora}}},
			{WorkerID: 2, ExtBase: 200, Stores: []pypeer.CostStore{{Tier: "device", From: 0, To: 6}}},
			{WorkerID: 3, ExtBase: 300, Stores: []pypeer.CostStore{{Tier: "device", From: 0, To: 4, LoraName: lora}}},
		}}})[0]
	if ref.WorkerID != 1 || ref.Cost != 13.5 || ref.Ties != 1 {
		t.Fatalf("reference model: %+v, want worker 1 at cost 13.5", ref)
	}

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	p.waitLine(t, 30*time.Second, "hintstream running")
	req := wake("tier-1", "s-tier", prompt)
	req.LoraName = lora
	publishRequest(t, ctx, js, req)
	sink.WaitFor(t, 5*time.Second, hasRequest("tier-1"), "prefetch for tier-1")
	m := byRequest(sink.Messages(), "tier-1")[0]
	if !m.OK || m.Endpoint != eps[ref.WorkerID-1] {
		t.Fatalf("tier-1 went to %s (ok=%v %s), the reference picks worker %d at %s", m.Endpoint, m.OK, m.Error, ref.WorkerID, eps[ref.WorkerID-1])
	}
	p.stop(t)
	c := finalCounters(t, p)
	if c["hintstream_kv_events_malformed_total"] != 0 || c["hintstream_kv_events_unknown_parent_total"] != 0 || c["hintstream_kv_events_applied_total|stored"] != 4 {
		t.Fatalf("KV events not all applied: %v", c)
	}
}
