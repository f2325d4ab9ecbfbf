package schemas

import (
	"encoding/json"
	"testing"
)

// TestCompactRouterEvent: the compact declaration-order path takes what
// Dynamo's serde_json and encoding/json write, with the slow path's
// value, and leaves every other shape to the general fast path (which
// FuzzFastRouterEventJSON holds to encoding/json, compact path included).
func TestCompactRouterEvent(t *testing.T) {
	parent := BlockHash(9)
	start := uint32(32)
	marshalled, err := json.Marshal(RouterEvent{WorkerID: 3, StorageTier: TierHostPinned, Event: KvCacheEvent{EventID: 8, DpRank: 2,
		Data: KvCacheEventData{Kind: KindStored, Stored: &KvCacheStoreData{ParentHash: &parent, StartPosition: &start,
			Blocks: []StoredBlock{{BlockHash: 1, TokensHash: 2}, {BlockHash: 1 << 63, TokensHash: 1<<64 - 1}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":1}}`
	}
	cases := []struct {
		name    string
		in      string
		compact bool // the compact path takes it (else the general one must)
	}{
		{"serde_json", string(benchRouterEvent()), true},
		{"encoding/json", string(marshalled), true},
		{"no dp_rank", `{"worker_id":7,"event":{"event_id":5,"data":{"stored":{"parent_hash":null,"blocks":[]}}}}`, true},
		{"removed", ev(`{"removed":{"block_hashes":[18446744073709551615,-2,0]}}`), true},
		{"removed empty", ev(`{"removed":{"block_hashes":[]}}`), true},
		{"negative hashes", ev(`{"stored":{"parent_hash":-1,"blocks":[{"block_hash":-0,"tokens_hash":-9223372036854775808}]}}`), true},
		{"trailing blanks", ev(`{"stored":{"parent_hash":1,"blocks":[{"block_hash":2,"tokens_hash":3}]}}`) + " \n", true},
		{"spaces", `{"worker_id": 7, "event": {"event_id": 5, "data": {"stored": {"parent_hash": null, "blocks": []}}}}`, false},
		{"other order", `{"event":{"event_id":5,"data":{"removed":{"block_hashes":[1]}}},"worker_id":7}`, false},
		{"block keys swapped", ev(`{"stored":{"parent_hash":1,"blocks":[{"tokens_hash":3,"block_hash":2}]}}`), false},
		{"no parent_hash", ev(`{"stored":{"blocks":[{"block_hash":2,"tokens_hash":3}]}}`), false},
		{"cleared", ev(`"cleared"`), false},
		{"removed no hashes", ev(`{"removed":{}}`), false},
		{"dp_rank first", `{"worker_id":7,"event":{"dp_rank":1,"event_id":5,"data":{"removed":{"block_hashes":[1]}}}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got RouterEvent
			p := jsonScan{b: []byte(c.in)}
			if ok := p.compactRouterEvent(DefaultLimits().MaxTokens, &got); ok != c.compact {
				t.Fatalf("compact path took it: %v, want %v", ok, c.compact)
			}
			var fast RouterEvent
			if !fastRouterEventJSON([]byte(c.in), DefaultLimits().MaxTokens, &fast) {
				t.Fatal("fast path declined it")
			}
			sameRouterEvent(t, Limits{}, []byte(c.in))
			sameRouterEvent(t, Limits{MaxTokens: 1, MaxDepth: 6}, []byte(c.in))
		})
	}
}
