package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type layoutCase struct {
	Name   string          `json:"name"`
	Layout json.RawMessage `json:"layout"`
}

func layoutCases(tb testing.TB) []layoutCase {
	tb.Helper()
	var f struct {
		Cases []layoutCase `json:"cases"`
	}
	if err := json.Unmarshal(readVector(tb, "sglang_pages_and_keys.json"), &f); err != nil {
		tb.Fatal(err)
	}
	if len(f.Cases) == 0 {
		tb.Fatal("sglang_pages_and_keys.json has no cases")
	}
	return f.Cases
}

// wantLayouts pins the vector layouts; a case not listed here is still
// checked against a generic decode of its JSON.
var wantLayouts = map[string]ObjectLayout{
	"mha-tp2-page16": {Backend: "mooncake", PageSize: 16, HicacheObjectLayout: HicacheObjectLayout{
		KeyPrefix: "prod_Qwen-Qwen3-8B", PpSize: 1,
		Pools: []LayoutPool{{Pool: "kv", Suffixes: []string{"_0_k", "_0_v", "_1_k", "_1_v"}, HitPolicy: "all_pages"}},
	}},
	"mla-page64-trailing2": {Backend: "mooncake", PageSize: 64, HicacheObjectLayout: HicacheObjectLayout{
		KeyPrefix: "tag_deepseek-ai-DeepSeek-V3", IsMLABackend: true, PpSize: 1,
		Pools: []LayoutPool{
			{Pool: "kv", Suffixes: []string{"__k"}, HitPolicy: "all_pages"},
			{Pool: "swa_state", Suffixes: []string{"__swa_state"}, HitPolicy: "trailing_pages", TrailingPages: 2},
		},
	}},
}

func TestObjectLayoutVectors(t *testing.T) {
	seen := 0
	for _, c := range layoutCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			var got ObjectLayout
			if err := json.Unmarshal(c.Layout, &got); err != nil {
				t.Fatal(err)
			}
			checkLayoutAgainstGeneric(t, c.Layout, &got)
			if want, ok := wantLayouts[c.Name]; ok {
				seen++
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("got %+v\nwant %+v", got, want)
				}
			}
			// The same layout inside the brief's worker record.
			rec := `{"worker_id":7,"model":"Qwen/Qwen3-8B","kv_block_size":16,` +
				`"hint_endpoints":["tcp://10.0.0.7:5570"],"object_layout":` + string(c.Layout) + `}`
			w, err := Limits{}.DecodeWorkerRecord([]byte(rec))
			if err != nil {
				t.Fatal(err)
			}
			if w.ObjectLayout == nil || !reflect.DeepEqual(*w.ObjectLayout, got) {
				t.Fatalf("record layout %+v != %+v", w.ObjectLayout, got)
			}
		})
	}
	if seen != len(wantLayouts) {
		t.Fatalf("only %d of the %d pinned layout cases are in the vector file", seen, len(wantLayouts))
	}
}

// checkLayoutAgainstGeneric compares the typed decode with an untyped one,
// so a renamed JSON tag cannot pass unnoticed.
func checkLayoutAgainstGeneric(t *testing.T, raw []byte, got *ObjectLayout) {
	t.Helper()
	var g struct {
		PageSize float64 `json:"page_size"`
		Hicache  struct {
			KeyPrefix string `json:"key_prefix"`
			Pools     []map[string]any
		} `json:"hicache_object_layout"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	h := got.HicacheObjectLayout
	if float64(got.PageSize) != g.PageSize || got.PageSize == 0 {
		t.Errorf("page_size %d, file says %v", got.PageSize, g.PageSize)
	}
	if h.KeyPrefix != g.Hicache.KeyPrefix || h.KeyPrefix == "" {
		t.Errorf("key_prefix %q, file says %q", h.KeyPrefix, g.Hicache.KeyPrefix)
	}
	if len(h.Pools) != len(g.Hicache.Pools) {
		t.Fatalf("%d pools, file has %d", len(h.Pools), len(g.Hicache.Pools))
	}
	for i, p := range g.Hicache.Pools {
		gp := h.Pools[i]
		if gp.Pool != p["pool"] || gp.HitPolicy != p["hit_policy"] {
			t.Errorf("pool %d = %+v, file %v", i, gp, p)
		}
		sfx, _ := p["suffixes"].([]any)
		if len(gp.Suffixes) != len(sfx) {
			t.Fatalf("pool %d suffixes %v, file %v", i, gp.Suffixes, sfx)
		}
		for j := range sfx {
			if gp.Suffixes[j] != sfx[j] {
				t.Errorf("pool %d suffix %d = %q, file %v", i, j, gp.Suffixes[j], sfx[j])
			}
		}
		tp, _ := p["trailing_pages"].(float64)
		if float64(gp.TrailingPages) != tp {
			t.Errorf("pool %d trailing_pages %d, file %v", i, gp.TrailingPages, p["trailing_pages"])
		}
	}
}

func TestDecodeWorkerRecordBriefExample(t *testing.T) {
	rec := `{ "worker_id": 7, "model": "Qwen/Qwen3-8B", "kv_block_size": 16,
	  "hint_endpoints": ["tcp://10.0.0.7:5570", "tcp://[fd00::7]:5571", "tcp://worker-7.pool.svc:5572"],
	  "object_layout": { "page_size": 64, "hicache_object_layout": { "key_prefix": "p",
	    "pools": [ { "pool": "kv", "suffixes": ["__k"], "hit_policy": "all_pages" } ] } },
	  "future_field": {"x": 1} }`
	w, err := Limits{}.DecodeWorkerRecord([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	want := WorkerRecord{
		WorkerID: 7, Model: "Qwen/Qwen3-8B", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://10.0.0.7:5570", "tcp://[fd00::7]:5571", "tcp://worker-7.pool.svc:5572"},
		ObjectLayout: &ObjectLayout{PageSize: 64, HicacheObjectLayout: HicacheObjectLayout{
			KeyPrefix: "p", Pools: []LayoutPool{{Pool: "kv", Suffixes: []string{"__k"}, HitPolicy: "all_pages"}},
		}},
	}
	if !reflect.DeepEqual(*w, want) {
		t.Fatalf("got %s\nwant %s", mustJSON(t, w), mustJSON(t, &want))
	}
	// Without object_layout (pins off for this worker) the record is valid.
	w, err = Limits{}.DecodeWorkerRecord([]byte(`{"worker_id":8,"kv_block_size":64,"hint_endpoints":["tcp://h:1"]}`))
	if err != nil || w.ObjectLayout != nil {
		t.Fatalf("record without layout: %+v, %v", w, err)
	}
}

func TestDecodeWorkerRecordErrors(t *testing.T) {
	rec := func(fields string) string { return `{"worker_id":7,"model":"m",` + fields + `}` }
	ok := `"kv_block_size":16,"hint_endpoints":["tcp://10.0.0.7:5570"]`
	cases := []struct {
		name, json, reason, msg string
		lim                     Limits
	}{
		{name: "no endpoints field", json: rec(`"kv_block_size":16`), reason: "invalid worker record", msg: "no hint_endpoints"},
		{name: "empty endpoints", json: rec(`"kv_block_size":16,"hint_endpoints":[]`), reason: "invalid worker record", msg: "no hint_endpoints"},
		{name: "null endpoints", json: rec(`"kv_block_size":16,"hint_endpoints":null`), reason: "invalid worker record", msg: "no hint_endpoints"},
		{name: "http scheme", json: rec(`"kv_block_size":16,"hint_endpoints":["http://10.0.0.7:5570"]`), reason: "invalid worker record", msg: "hint_endpoints[0]"},
		{name: "no scheme", json: rec(`"kv_block_size":16,"hint_endpoints":["10.0.0.7:5570"]`), reason: "invalid worker record", msg: "hint_endpoints[0]"},
		{name: "scheme only", json: rec(`"kv_block_size":16,"hint_endpoints":["tcp://10.0.0.7:1","tcp://"]`), reason: "invalid worker record", msg: "hint_endpoints[1]"},
		{name: "upper-case scheme", json: rec(`"kv_block_size":16,"hint_endpoints":["TCP://h:1"]`), reason: "invalid worker record", msg: "hint_endpoints[0]"},
		{name: "kv_block_size 0", json: rec(`"kv_block_size":0,"hint_endpoints":["tcp://h:1"]`), reason: "invalid worker record", msg: "kv_block_size"},
		{name: "kv_block_size absent", json: rec(`"hint_endpoints":["tcp://h:1"]`), reason: "invalid worker record", msg: "kv_block_size"},
		{name: "kv_block_size negative", json: rec(`"kv_block_size":-16,"hint_endpoints":["tcp://h:1"]`), reason: "wrong type for kv_block_size"},
		{name: "worker_id string", json: `{"worker_id":"7",` + ok + `}`, reason: "wrong type for worker_id"},
		{name: "endpoint not a string", json: rec(`"kv_block_size":16,"hint_endpoints":[5570]`), reason: "wrong type for hint_endpoints"},
		{name: "page_size string", json: rec(ok + `,"object_layout":{"page_size":"64"}`), reason: "wrong type for object_layout.page_size"},
		{name: "unterminated JSON", json: `{"worker_id":7,` + ok, reason: "invalid JSON"},
		{name: "invalid UTF-8", json: rec(ok + `,"x":"` + "\xff" + `"`), reason: "invalid UTF-8"},
		{name: "too large", lim: Limits{MaxBytes: 16}, json: rec(ok), reason: "message too large"},
		{name: "deep nesting", json: `{"worker_id":7,"x":` + strings.Repeat("[", 100_000), reason: "JSON nested too deeply"},
		{name: "empty", json: ``, reason: "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := c.lim.DecodeWorkerRecord([]byte(c.json))
			if w != nil {
				t.Errorf("got %+v with error %v", w, err)
			}
			de := wantDecodeError(t, err, "worker", c.reason)
			if c.msg != "" && (de.Err == nil || !strings.Contains(de.Err.Error(), c.msg)) {
				t.Errorf("underlying error %v should mention %q", de.Err, c.msg)
			}
		})
	}
}

func TestWorkerRecordValidate(t *testing.T) {
	good := WorkerRecord{WorkerID: 1, KvBlockSize: 16, HintEndpoints: []string{"tcp://a:1", "ipc://x"}}
	if err := good.ValidateWith(EndpointRules{AllowIPC: true}); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	for name, w := range map[string]WorkerRecord{
		"zero block size": {WorkerID: 1, HintEndpoints: []string{"tcp://a:1"}},
		"no endpoints":    {WorkerID: 1, KvBlockSize: 16},
		"empty endpoint":  {WorkerID: 1, KvBlockSize: 16, HintEndpoints: []string{""}},
		"udp endpoint":    {WorkerID: 1, KvBlockSize: 16, HintEndpoints: []string{"udp://a:1"}},
		"ipc scheme only": {WorkerID: 1, KvBlockSize: 16, HintEndpoints: []string{"ipc://"}},
	} {
		if err := w.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", name)
		}
	}
}
