package schemas

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func bh(v uint64) *BlockHash { h := BlockHash(v); return &h }

// routerEventLines returns the non-blank lines of the Dynamo vector file.
func routerEventLines(tb testing.TB) [][]byte {
	tb.Helper()
	var lines [][]byte
	for _, l := range bytes.Split(readVector(tb, "dynamo_router_events.jsonl"), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	if len(lines) != 4 {
		tb.Fatalf("dynamo_router_events.jsonl: %d events, want 4", len(lines))
	}
	return lines
}

func TestDecodeRouterEventVectors(t *testing.T) {
	// The tokens_hash values exceed 2^53: a float64 detour would corrupt them.
	want := []RouterEvent{
		{WorkerID: 7, Event: KvCacheEvent{EventID: 1, Data: KvCacheEventData{Kind: KindStored, Stored: &KvCacheStoreData{
			Blocks: []StoredBlock{
				{BlockHash: 9001, TokensHash: 15310707395893867146},
				{BlockHash: 9002, TokensHash: 15292316782987903195},
			}}}}},
		{WorkerID: 7, StorageTier: TierDevice, Event: KvCacheEvent{EventID: 2, Data: KvCacheEventData{Kind: KindStored, Stored: &KvCacheStoreData{
			ParentHash: bh(9002),
			Blocks:     []StoredBlock{{BlockHash: 9003, TokensHash: 5532946206955930018}},
		}}}},
		{WorkerID: 7, Event: KvCacheEvent{EventID: 3, Data: KvCacheEventData{Kind: KindRemoved, Removed: &KvCacheRemoveData{
			BlockHashes: []BlockHash{9003},
		}}}},
		{WorkerID: 7, Event: KvCacheEvent{EventID: 4, Data: KvCacheEventData{Kind: KindCleared}}},
	}
	for i, line := range routerEventLines(t) {
		got, err := Limits{}.DecodeRouterEvent(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(*got, want[i]) {
			t.Fatalf("line %d:\n got %s\nwant %s", i+1, mustJSON(t, got), mustJSON(t, &want[i]))
		}
		if got.Tier() != TierDevice {
			t.Errorf("line %d: Tier() = %q, want device", i+1, got.Tier())
		}
	}
	if s := string(routerEventLines(t)[3]); !strings.Contains(s, `"data": "cleared"`) {
		t.Fatalf("vector 4 should use the bare string form, got %s", s)
	}
}

// The expected hashes above are checked against the file's own digits, so
// a regenerated vector file cannot silently disagree with this test.
func TestRouterEventVectorDigits(t *testing.T) {
	lines := routerEventLines(t)
	for i, line := range lines {
		ev, err := Limits{}.DecodeRouterEvent(line)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event.Data.Kind != KindStored {
			continue
		}
		for _, b := range ev.Event.Data.Stored.Blocks {
			for _, h := range []BlockHash{b.BlockHash, b.TokensHash} {
				if !bytes.Contains(line, []byte(": "+uintString(uint64(h)))) {
					t.Errorf("line %d: hash %d not found verbatim", i+1, uint64(h))
				}
			}
		}
	}
}

func uintString(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestDecodeRouterEventForms(t *testing.T) {
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":1}}`
	}
	cases := []struct {
		name  string
		json  string
		check func(t *testing.T, e *RouterEvent)
	}{
		{"cleared object with null", ev(`{"cleared":null}`), func(t *testing.T, e *RouterEvent) {
			if e.Event.Data.Kind != KindCleared || e.Event.Data.Stored != nil || e.Event.Data.Removed != nil {
				t.Fatalf("got %+v", e.Event.Data)
			}
		}},
		{"cleared object with empty", ev(`{"cleared":{}}`), func(t *testing.T, e *RouterEvent) {
			if e.Event.Data.Kind != KindCleared {
				t.Fatalf("got %+v", e.Event.Data)
			}
		}},
		{"negative hashes are two's complement", ev(`{"stored":{"parent_hash":-1,"blocks":[{"block_hash":-1,"tokens_hash":-9223372036854775808}]}}`),
			func(t *testing.T, e *RouterEvent) {
				s := e.Event.Data.Stored
				if *s.ParentHash != math.MaxUint64 || s.Blocks[0].BlockHash != math.MaxUint64 || s.Blocks[0].TokensHash != 1<<63 {
					t.Fatalf("got %s", mustJSON(t, s))
				}
			}},
		{"max uint64 hash", ev(`{"removed":{"block_hashes":[18446744073709551615,0,-2]}}`), func(t *testing.T, e *RouterEvent) {
			want := []BlockHash{math.MaxUint64, 0, math.MaxUint64 - 1}
			if !reflect.DeepEqual(e.Event.Data.Removed.BlockHashes, want) {
				t.Fatalf("got %v", e.Event.Data.Removed.BlockHashes)
			}
		}},
		{"ignored Dynamo fields", `{"worker_id":7,"storage_tier":"host_pinned","event":{"event_id":6,"data":{"stored":{"parent_hash":null,"start_position":32,` +
			`"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_hashes":[3]}}]}},"dp_rank":0}}`, func(t *testing.T, e *RouterEvent) {
			s := e.Event.Data.Stored
			if e.Tier() != TierHostPinned || s.StartPosition == nil || *s.StartPosition != 32 || len(s.Blocks) != 1 || s.Blocks[0].TokensHash != 2 {
				t.Fatalf("got %s", mustJSON(t, e))
			}
		}},
		{"every tier", `{"worker_id":1,"storage_tier":"disk","event":{"event_id":0,"data":"cleared"}}`, func(t *testing.T, e *RouterEvent) {
			if e.Tier() != TierDisk || e.Event.DpRank != 0 {
				t.Fatalf("got %+v", e)
			}
		}},
		{"external tier", `{"worker_id":1,"storage_tier":"external","event":{"event_id":0,"data":"cleared"}}`, func(t *testing.T, e *RouterEvent) {
			if e.Tier() != TierExternal {
				t.Fatalf("got %q", e.Tier())
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Limits{}.DecodeRouterEvent([]byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, e)
		})
	}
}

func TestDecodeRouterEventErrors(t *testing.T) {
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":0}}`
	}
	cases := []struct {
		name, json, reason string
		lim                Limits
	}{
		{name: "unknown variant", json: ev(`{"moved":{}}`), reason: "unknown event tag"},
		{name: "unknown string variant", json: ev(`"moved"`), reason: "unknown event tag"},
		{name: "two variants", json: ev(`{"cleared":null,"removed":{"block_hashes":[]}}`), reason: "invalid JSON"},
		{name: "no variant", json: ev(`{}`), reason: "invalid JSON"},
		{name: "data null", json: ev(`null`), reason: "invalid JSON"},
		{name: "data number", json: ev(`3`), reason: "wrong JSON type"},
		{name: "data absent", json: `{"worker_id":7,"event":{"event_id":1}}`, reason: "missing event data"},
		{name: "hash beyond 64 bits", json: ev(`{"removed":{"block_hashes":[18446744073709551616]}}`), reason: "block hash not a 64-bit integer"},
		{name: "hash below int64", json: ev(`{"removed":{"block_hashes":[-9223372036854775809]}}`), reason: "block hash not a 64-bit integer"},
		{name: "hash float", json: ev(`{"removed":{"block_hashes":[1.5]}}`), reason: "block hash not a 64-bit integer"},
		{name: "hash string", json: ev(`{"removed":{"block_hashes":["1"]}}`), reason: "block hash not a 64-bit integer"},
		{name: "hash null", json: ev(`{"stored":{"blocks":[{"block_hash":null,"tokens_hash":1}]}}`), reason: "block hash not a 64-bit integer"},
		{name: "worker_id string", json: `{"worker_id":"7","event":{"event_id":1,"data":"cleared"}}`, reason: "wrong type for worker_id"},
		{name: "invalid UTF-8", json: "{\"worker_id\":7,\"storage_tier\":\"\xff\",\"event\":{\"data\":\"cleared\"}}", reason: "invalid UTF-8"},
		{name: "too large", lim: Limits{MaxBytes: 10}, json: ev(`"cleared"`), reason: "message too large"},
		{name: "too many blocks", lim: Limits{MaxTokens: 1}, json: ev(`{"stored":{"blocks":[{"block_hash":1,"tokens_hash":1},{"block_hash":2,"tokens_hash":2}]}}`), reason: "too many blocks"},
		{name: "deep nesting", json: `{"worker_id":7,"x":` + strings.Repeat("[", 100_000), reason: "JSON nested too deeply"},
		{name: "trailing", json: ev(`"cleared"`) + ` {}`, reason: "invalid JSON"},
		{name: "not JSON", json: "\x81\xa1a\x01", reason: "invalid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := c.lim.DecodeRouterEvent([]byte(c.json))
			if e != nil {
				t.Errorf("got %+v with error %v", e, err)
			}
			wantDecodeError(t, err, "router_event", c.reason)
		})
	}
}

func TestKvCacheEventDataRoundTrip(t *testing.T) {
	datas := []KvCacheEventData{
		{Kind: KindStored, Stored: &KvCacheStoreData{ParentHash: bh(math.MaxUint64), Blocks: []StoredBlock{
			{BlockHash: 1, TokensHash: 15310707395893867146}, {BlockHash: 1 << 63, TokensHash: 0},
		}}},
		{Kind: KindStored, Stored: &KvCacheStoreData{Blocks: []StoredBlock{{BlockHash: 5, TokensHash: 6}}}},
		{Kind: KindRemoved, Removed: &KvCacheRemoveData{BlockHashes: []BlockHash{9003, math.MaxUint64}}},
		{Kind: KindCleared},
	}
	wantJSON := []string{
		`{"stored":{"parent_hash":18446744073709551615,"blocks":[{"block_hash":1,"tokens_hash":15310707395893867146},{"block_hash":9223372036854775808,"tokens_hash":0}]}}`,
		`{"stored":{"parent_hash":null,"blocks":[{"block_hash":5,"tokens_hash":6}]}}`,
		`{"removed":{"block_hashes":[9003,18446744073709551615]}}`,
		`"cleared"`,
	}
	for i, d := range datas {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != wantJSON[i] {
			t.Errorf("%s: marshal = %s\nwant %s", d.Kind, b, wantJSON[i])
		}
		var back KvCacheEventData
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: unmarshal: %v", d.Kind, err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("%s: round trip %s != %s", d.Kind, mustJSON(t, back), mustJSON(t, d))
		}
		// And through a whole RouterEvent and the validating decoder.
		re := RouterEvent{WorkerID: 3, StorageTier: TierExternal, Event: KvCacheEvent{EventID: uint64(i), Data: d, DpRank: 2}}
		got, err := Limits{}.DecodeRouterEvent([]byte(mustJSON(t, re)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, re) {
			t.Fatalf("RouterEvent round trip: %s != %s", mustJSON(t, got), mustJSON(t, re))
		}
	}
	for _, bad := range []KvCacheEventData{{}, {Kind: KindStored}, {Kind: KindRemoved}, {Kind: 9}} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("marshal of %+v succeeded", bad)
		}
	}
	if KindStored.String() != "stored" || KindRemoved.String() != "removed" || KindCleared.String() != "cleared" || EventKind(0).String() != "unknown" {
		t.Error("EventKind names changed")
	}
}

func TestStorageTierValid(t *testing.T) {
	for _, tier := range []StorageTier{TierDevice, TierHostPinned, TierDisk, TierExternal} {
		if !tier.Valid() {
			t.Errorf("%q not valid", tier)
		}
	}
	for _, tier := range []StorageTier{"", "Device", "gpu"} {
		if tier.Valid() {
			t.Errorf("%q valid", tier)
		}
	}
	var e RouterEvent
	if e.Tier() != TierDevice {
		t.Errorf("absent tier = %q", e.Tier())
	}
}

// An unknown storage_tier decodes (the index counts and ignores the
// event), cut to 64 bytes.
func TestDecodeRouterEventUnknownTier(t *testing.T) {
	for _, tier := range []string{"gpu", strings.Repeat("t", 200)} {
		e, err := Limits{}.DecodeRouterEvent([]byte(`{"worker_id":7,"storage_tier":"` + tier + `","event":{"event_id":1,"data":"cleared"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if e.Tier().Valid() || len(e.StorageTier) > 64 || !strings.HasPrefix(tier, string(e.StorageTier)) {
			t.Fatalf("tier %q decoded as %q", tier, e.StorageTier)
		}
	}
}
