package cluster

import (
	"reflect"
	"testing"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

func u64(v uint64) *uint64 { return &v }

// twoWorkers: block size 4; worker 1 holds the first two blocks of a
// 12-token prompt, worker 2 nothing.
func twoWorkers(t *testing.T) (*Router, []uint32) {
	t.Helper()
	tokens := make([]uint32, 12)
	for i := range tokens {
		tokens[i] = uint32(100 + i)
	}
	recs := []schemas.WorkerRecord{
		{WorkerID: 1, Model: "m", KvBlockSize: 4, HintEndpoints: []string{"inproc://1"}},
		{WorkerID: 2, Model: "m", KvBlockSize: 4, HintEndpoints: []string{"inproc://2"}},
	}
	caches := []*DeviceCache{NewDeviceCache(8), NewDeviceCache(8)}
	caches[0].Admit(kvevents.PromptHashes(tokens[:8], 4))
	r, err := NewRouter(recs, caches, routing.DefaultConfig())
	if err != nil {
		panic(err)
	}
	return r, tokens
}

// The logit is (uncached prompt tokens + active prefill tokens)/bs +
// active decode blocks + floor(isl/bs); lower wins. Here isl = 12, bs = 4.
func TestRouterPicksWhatTheFormulaFavours(t *testing.T) {
	r, tokens := twoWorkers(t)
	// Idle: worker 1 = (12-8)/4 + 3 = 4, worker 2 = 12/4 + 3 = 6.
	if w, c, err := r.Route("m", tokens); err != nil || w != 0 || c.Overlap != 2 || c.Logit != 4 {
		t.Fatalf("idle: worker index %d candidate %+v err %v; want worker 1, overlap 2, logit 4", w, c, err)
	}
	// Worker 1 decoding 3 blocks: 4 + 3 = 7 > 6.
	r.SetLoad(schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: u64(3)})
	if w, c, _ := r.Route("m", tokens); w != 1 || c.Logit != 6 {
		t.Fatalf("loaded: worker index %d logit %v; want worker 2 at 6", w, c.Logit)
	}
	// Worker 1 prefilling 8 tokens instead: (4+8)/4 + 3 = 6 = worker 2's
	// 6; the tie goes to the longer overlap.
	r.SetLoad(schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: u64(0), ActivePrefillTokens: u64(8)})
	if w, c, _ := r.Route("m", tokens); w != 0 || c.Logit != 6 {
		t.Fatalf("tie: worker index %d logit %v; want worker 1 at 6 (longer overlap)", w, c.Logit)
	}
	// Without overlap anywhere and equal loads: the lowest worker id.
	r.SetLoad(schemas.ActiveLoad{WorkerID: 1, ActivePrefillTokens: u64(0)})
	other := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	if w, c, _ := r.Route("m", other); w != 0 || c.Overlap != 0 {
		t.Fatalf("no overlap: worker index %d", w)
	}
	if ov := r.Overlap(kvevents.PromptHashes(tokens, 4)); ov[kvevents.WorkerKey{WorkerID: 1}] != 2 || len(ov) != 1 {
		t.Fatalf("overlap %v", ov)
	}
}

func TestRouterNoWorkerForModel(t *testing.T) {
	r, tokens := twoWorkers(t)
	if _, _, err := r.Route("other-model", tokens); err == nil {
		t.Fatal("a model no worker serves must fail")
	}
}

// RouteHashes chooses as Route does for the prompt its hashes come
// from, candidate and all: at every load, overlap and length, including
// prompts shorter than a block and with a partial last block.
func TestRouteHashesIsRoute(t *testing.T) {
	byTokens, _ := twoWorkers(t)
	byHashes, _ := twoWorkers(t)
	for n := range 40 {
		tokens := make([]uint32, n)
		for i := range tokens {
			tokens[i] = uint32(100 + i)
		}
		if n%3 == 0 {
			tokens = append(tokens[:0:0], tokens...)
			for i := 8; i < n; i++ {
				tokens[i] = uint32(7 * i)
			}
		}
		for _, r := range []*Router{byTokens, byHashes} {
			r.SetLoad(schemas.ActiveLoad{WorkerID: 1 + uint64(n%2), ActivePrefillTokens: u64(uint64(n % 7 * 4)), ActiveDecodeBlocks: u64(uint64(n % 5))})
		}
		w1, c1, err1 := byTokens.Route("m", tokens)
		w2, c2, err2 := byHashes.RouteHashes("m", kvevents.PromptHashes(tokens, 4), 4, len(tokens))
		if w1 != w2 || !reflect.DeepEqual(c1, c2) || err1 != err2 {
			t.Fatalf("%d tokens: by tokens worker %d %+v %v, by hashes worker %d %+v %v", n, w1, c1, err1, w2, c2, err2)
		}
	}
}
