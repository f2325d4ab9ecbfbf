package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

type staticWorkers []schemas.WorkerRecord

func (s staticWorkers) Workers() []schemas.WorkerRecord { return s }

const curveKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"

// inspectFixture is real inspection sources: a registry view of two
// workers (worker 2 with two dp ranks), an index where worker 1 holds the
// prompt's first block and is stale (an event id gap), worker 2 rank 1
// holds its first three blocks, a load table where 2/1 is busy, a
// selector over them, and a learner with a few tool times.
func inspectFixture(t *testing.T) (Sources, []uint32) {
	t.Helper()
	ws := staticWorkers{
		{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:7001"},
			HintCurvePublicKey: curveKey, ObjectLayout: &schemas.ObjectLayout{PageSize: 16}},
		{WorkerID: 2, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:7002", "tcp://127.0.0.1:7003"}},
		{WorkerID: 3, Model: "other", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:7004"}},
	}
	prompt := make([]uint32, 70) // 4 full blocks and 6 tokens
	for i := range prompt {
		prompt[i] = uint32(1000 + i)
	}
	ix := index.New()
	store := func(k kvevents.WorkerKey, id uint64, tokens []uint32) {
		t.Helper()
		local := kvevents.LocalBlockHashes(tokens, 16)
		blocks := make([]kvevents.Block, len(local))
		for i, h := range local {
			blocks[i] = kvevents.Block{ExternalHash: k.WorkerID<<40 | uint64(k.DpRank)<<32 | id<<8 | uint64(i), LocalHash: h}
		}
		if err := ix.Apply(kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindStored, Blocks: blocks}); err != nil {
			t.Fatal(err)
		}
	}
	store(kvevents.WorkerKey{WorkerID: 1}, 1, prompt[:16])
	store(kvevents.WorkerKey{WorkerID: 1}, 3, []uint32{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}) // id 2 lost
	store(kvevents.WorkerKey{WorkerID: 2, DpRank: 1}, 1, prompt[:48])
	loads := routing.NewLoadTable()
	prefill, decode := uint64(8), uint64(2)
	loads.Update(schemas.ActiveLoad{WorkerID: 2, DpRank: 1, ActivePrefillTokens: &prefill, ActiveDecodeBlocks: &decode})
	sel, err := routing.NewSelector(ws, ix, loads)
	if err != nil {
		t.Fatal(err)
	}
	lr := tooltime.New(tooltime.Config{MinSamples: 2})
	for _, d := range []time.Duration{time.Second, 3 * time.Second} {
		lr.Observe("search", d)
	}
	return Sources{Index: ix.Stats, Workers: ws.Workers, Loads: loads.Get, Stale: ix.StaleWorkers,
		Choose: sel.Choose, ToolTime: func() ([]tooltime.ToolStats, bool) { return lr.Snapshot(), true }}, prompt
}

func serve(t *testing.T, s Sources) string {
	t.Helper()
	srv, err := Start(Options{Addr: "127.0.0.1:0"}, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return "http://" + srv.Addr()
}

// call does a request and decodes a JSON answer into v (when not nil).
func call(t *testing.T, method, url string, body io.Reader, v any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

func TestInspectWorkers(t *testing.T) {
	src, _ := inspectFixture(t)
	base := serve(t, src)
	var v WorkersView
	code, raw := call(t, "GET", base+"/v1/workers", nil, &v)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if strings.Contains(raw, curveKey) {
		t.Fatal("/v1/workers leaks the CURVE key")
	}
	if len(v.Workers) != 3 {
		t.Fatalf("%d workers, want 3: %s", len(v.Workers), raw)
	}
	w1, w2 := v.Workers[0], v.Workers[1]
	if w1.WorkerID != 1 || !w1.HasCurveKey || !w1.HasObjectLayout || len(w1.Ranks) != 1 || !w1.Ranks[0].Stale {
		t.Fatalf("worker 1 = %+v, want curve key, layout, one stale rank", w1)
	}
	if w1.Ranks[0].Load.ActivePrefillTokens != nil {
		t.Fatalf("worker 1 never reported load, got %+v", w1.Ranks[0].Load)
	}
	if w2.HasCurveKey || w2.HasObjectLayout || len(w2.Ranks) != 2 || w2.Ranks[1].Stale ||
		w2.Ranks[1].Endpoint != "tcp://127.0.0.1:7003" || w2.KvBlockSize != 16 || w2.Model != "m" {
		t.Fatalf("worker 2 = %+v", w2)
	}
	if l := w2.Ranks[1].Load; l.ActivePrefillTokens == nil || *l.ActivePrefillTokens != 8 ||
		l.ActiveDecodeBlocks == nil || *l.ActiveDecodeBlocks != 2 || l.KvUsedBlocks != nil {
		t.Fatalf("worker 2 rank 1 load = %+v, want 8 prefill tokens, 2 decode blocks, no used blocks", l)
	}
}

func TestInspectIndex(t *testing.T) {
	src, _ := inspectFixture(t)
	base := serve(t, src)
	var v IndexView
	if code, raw := call(t, "GET", base+"/v1/index", nil, &v); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	// Worker 1: 1 + 1 blocks, worker 2 rank 1: 3.
	if v.Workers != 2 || v.DeviceBlocks != 5 || v.Gaps != 1 {
		t.Fatalf("index = %+v, want 2 workers, 5 device blocks, 1 gap", v)
	}
	if len(v.StaleWorkers) != 1 || v.StaleWorkers[0] != (WorkerKeyView{WorkerID: 1}) {
		t.Fatalf("stale = %+v, want worker 1 rank 0", v.StaleWorkers)
	}
}

// TestInspectOverlap checks the candidates' terms against the logit
// worked out by hand (70 tokens, block size 16, 4 full blocks):
//
//	1/0: overlap 1: (70-16)/16 = 3.375 + 4 = 7.375  ← lowest
//	2/0: overlap 0:  70/16     = 4.375 + 4 = 8.375
//	2/1: overlap 3: (70-48+8)/16 = 1.875 + 4+2 = 7.875 (its load costs it)
//
// and that asking books nothing: the same answer every time.
func TestInspectOverlap(t *testing.T) {
	src, prompt := inspectFixture(t)
	base := serve(t, src)
	body, _ := json.Marshal(OverlapRequest{Model: "m", TokenIDs: prompt})
	for range 3 {
		var v OverlapView
		if code, raw := call(t, "POST", base+"/v1/overlap", bytes.NewReader(body), &v); code != 200 {
			t.Fatalf("status %d: %s", code, raw)
		}
		if v.Chosen == nil || *v.Chosen != (WorkerKeyView{WorkerID: 1}) || v.Tokens != 70 || v.RequestID != InspectRequestID {
			t.Fatalf("overlap = %+v, want worker 1 rank 0 chosen for 70 tokens", v)
		}
		want := []CandidateView{
			// Default cost: prefill_blocks before the credit, then the credit.
			{WorkerID: 1, Endpoint: "tcp://127.0.0.1:7001", BlockSize: 16, OverlapBlocks: 1, PrefillBlocks: 4.375, OverlapCredit: 1, DecodeBlocks: 4, Logit: 7.375, Chosen: true},
			{WorkerID: 2, Endpoint: "tcp://127.0.0.1:7002", BlockSize: 16, PrefillBlocks: 4.375, DecodeBlocks: 4, Logit: 8.375},
			{WorkerID: 2, DpRank: 1, Endpoint: "tcp://127.0.0.1:7003", BlockSize: 16, OverlapBlocks: 3, PrefillBlocks: 4.875, OverlapCredit: 3, DecodeBlocks: 6, Logit: 7.875},
		}
		if len(v.Candidates) != len(want) {
			t.Fatalf("candidates = %+v", v.Candidates)
		}
		for i, c := range v.Candidates {
			c.Load = LoadView{}
			if c != want[i] {
				t.Fatalf("candidate %d = %+v, want %+v", i, c, want[i])
			}
		}
	}

	var none OverlapView
	body, _ = json.Marshal(OverlapRequest{Model: "nobody", TokenIDs: prompt})
	if code, raw := call(t, "POST", base+"/v1/overlap", bytes.NewReader(body), &none); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if none.Chosen != nil || none.Reason == "" || len(none.Candidates) != 0 {
		t.Fatalf("unserved model: %+v, want no choice, a reason, no candidates", none)
	}
}

func TestInspectOverlapRejects(t *testing.T) {
	src, _ := inspectFixture(t)
	base := serve(t, src)
	tooMany := `{"model":"m","token_ids":[` + strings.Repeat("0,", MaxOverlapTokens) + `0]}`
	for _, tc := range []struct {
		name, method, body string
		want               int
	}{
		{"GET", "GET", "", http.StatusMethodNotAllowed},
		{"not JSON", "POST", "tokens please", http.StatusBadRequest},
		{"negative token", "POST", `{"model":"m","token_ids":[-1]}`, http.StatusBadRequest},
		{"unknown field", "POST", `{"model":"m","tokens":[1]}`, http.StatusBadRequest},
		{"two values", "POST", `{"model":"m"} {}`, http.StatusBadRequest},
		{"too many tokens", "POST", tooMany, http.StatusBadRequest},
		{"too large", "POST", strings.Repeat(" ", MaxOverlapBody+1), http.StatusRequestEntityTooLarge},
	} {
		code, raw := call(t, tc.method, base+"/v1/overlap", strings.NewReader(tc.body), nil)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, code, tc.want, raw)
		}
		if tc.method == "POST" {
			var e ErrorView
			if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Error == "" {
				t.Errorf("%s: body %q is not an ErrorView", tc.name, raw)
			}
		}
	}
}

func TestInspectToolTime(t *testing.T) {
	src, _ := inspectFixture(t)
	base := serve(t, src)
	var v ToolTimeView
	if code, raw := call(t, "GET", base+"/v1/tooltime", nil, &v); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if len(v.Tools) != 2 || v.Tools[0].Tool != "" || v.Tools[1].Tool != "search" ||
		v.Tools[1].Samples != 2 || v.Tools[1].Source != "learned" || v.Tools[1].EstimateSeconds != 3 || v.Tools[1].P50Seconds != 1 {
		t.Fatalf("tool times = %+v, want the any-tool bucket then search learned at 3s", v.Tools)
	}

	src.ToolTime = func() ([]tooltime.ToolStats, bool) { return nil, false }
	if code, raw := call(t, "GET", serve(t, src)+"/v1/tooltime", nil, nil); code != 404 || !strings.Contains(raw, "pins are off") {
		t.Fatalf("pins off: status %d %s, want 404 saying pins are off", code, raw)
	}
}

// TestInspectOffAndNotReady: nil sources are 404, and every source waits
// for Ready (503 before) so it may read state set up after Start.
func TestInspectOffAndNotReady(t *testing.T) {
	base := serve(t, Sources{})
	for _, p := range []string{"/v1/workers", "/v1/index", "/v1/tooltime"} {
		if code, raw := call(t, "GET", base+p, nil, nil); code != 404 || !strings.Contains(raw, "off on this instance") {
			t.Errorf("GET %s with no source: %d %s, want 404", p, code, raw)
		}
	}
	if code, _ := call(t, "POST", base+"/v1/overlap", strings.NewReader(`{}`), nil); code != 404 {
		t.Errorf("POST /v1/overlap with no source: %d, want 404", code)
	}

	src, _ := inspectFixture(t)
	var ready atomic.Bool
	src.Ready = ready.Load
	base = serve(t, src)
	if code, _ := call(t, "GET", base+"/v1/workers", nil, nil); code != 503 {
		t.Fatalf("before ready: %d, want 503", code)
	}
	ready.Store(true)
	if code, _ := call(t, "GET", base+"/v1/workers", nil, nil); code != 200 {
		t.Fatalf("after ready: %d, want 200", code)
	}
}
