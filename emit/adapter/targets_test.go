package adapter

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

func dynamoStandin(t *testing.T, workers map[uint64]uint32) *standin.Dynamo {
	t.Helper()
	d := standin.NewDynamo([]string{model}, workers)
	t.Cleanup(d.Close)
	return d
}

func lmcacheStandin(t *testing.T, worldSizes ...int64) *standin.LMCache {
	t.Helper()
	l := standin.NewLMCache(model, worldSizes...)
	t.Cleanup(l.Close)
	return l
}

// TestDynamoPrefetch: a prefetch for worker 7, dp rank 1, sent over
// ZeroMQ, becomes one /v1/completions on the Dynamo frontend that carries
// Dynamo's routing headers (prefixed and alias names), the hint's token
// ids as the prompt, max_tokens 1, stream false and the salt in nvext;
// the stand-in refuses nothing and resolves the routing to worker 7,
// rank 1.
func TestDynamoPrefetch(t *testing.T) {
	d := dynamoStandin(t, map[uint64]uint32{7: 2})
	a := run(t, Config{PrefetchTarget: TargetDynamo, FrontendURL: d.URL + "/"})
	p := actions.Prefetch{RequestID: "wake-1", SessionID: "s-1", Model: model, TokenIDs: tokens(48), DpRank: 1,
		WorkerID: 7, CacheSalt: "tenant-a", ExpiresAt: time.Now().Add(10 * time.Second)}
	sendPrefetch(t, sender(t), a.Endpoint(), p)
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "the frontend call")
	if rej := d.Rejected(); len(rej) != 0 {
		t.Fatalf("the frontend refused %+v", rej)
	}
	acc := d.Accepted()
	if len(acc) != 1 {
		t.Fatalf("the frontend saw %d calls, want 1", len(acc))
	}
	c := acc[0]
	if c.Path != "/v1/completions" || c.WorkerID != 7 || c.DpRank == nil || *c.DpRank != 1 {
		t.Fatalf("routed %s to worker %d rank %v, want /v1/completions, 7, 1", c.Path, c.WorkerID, c.DpRank)
	}
	for h, want := range map[string]string{"x-dynamo-worker-instance-id": "7", "x-worker-instance-id": "7", "x-dynamo-dp-rank": "1", "x-dp-rank": "1"} {
		if got := c.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if c.Body["model"] != model || c.Body["max_tokens"] != json.Number("1") || c.Body["stream"] != false {
		t.Fatalf("body model %v max_tokens %v stream %v", c.Body["model"], c.Body["max_tokens"], c.Body["stream"])
	}
	if nv, _ := c.Body["nvext"].(map[string]any); nv["cache_salt"] != "tenant-a" || len(nv) != 1 {
		t.Fatalf("nvext %v, want only cache_salt tenant-a", c.Body["nvext"])
	}
	prompt, _ := c.Body["prompt"].([]any)
	if len(prompt) != 48 || prompt[47] != json.Number("329") { // tokens(48)[47] = 47*7
		t.Fatalf("prompt %v, want the hint's 48 ids", c.Body["prompt"])
	}
}

// TestDynamoMissingInstance: a prefetch for a worker the frontend does not
// know fails there with a server error; it is retried (the worker may be
// registering) but never past the hint's expiry, then dropped expired.
func TestDynamoMissingInstance(t *testing.T) {
	d := dynamoStandin(t, map[uint64]uint32{7: 1})
	a := run(t, Config{PrefetchTarget: TargetDynamo, FrontendURL: d.URL, RetryDelay: 10 * time.Millisecond})
	expires := time.Now().Add(300 * time.Millisecond)
	sendPrefetch(t, sender(t), a.Endpoint(), actions.Prefetch{RequestID: "gone", Model: model, TokenIDs: tokens(8),
		WorkerID: 9, ExpiresAt: expires})
	c := a.Counters()
	natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Dropped, metrics.AdapterDropExpired) == 1 }, "given up at expiry")
	rej := d.Rejected()
	if len(rej) < 2 || len(d.Accepted()) != 0 || value(c.Failed, metrics.AdapterFailServerError) != uint64(len(rej)) {
		t.Fatalf("rejected %d, accepted %d, server_error %d", len(rej), len(d.Accepted()), value(c.Failed, metrics.AdapterFailServerError))
	}
	if !strings.Contains(rej[0].Error, "instance_id=9 not found") {
		t.Fatalf("refused with %q", rej[0].Error)
	}
}

// TestDynamoChatBody: a prefetch submitted with the conversation's chat
// request warms through /v1/chat/completions with that request cut to
// one token: the prompt-shaping members kept, max_completion_tokens, n,
// stream_options and the speculative-prefill hint removed, the salt
// added, the routing headers set.
func TestDynamoChatBody(t *testing.T) {
	d := dynamoStandin(t, map[uint64]uint32{3: 1})
	a := run(t, Config{PrefetchTarget: TargetDynamo, FrontendURL: d.URL})
	body := json.RawMessage(`{"model":"` + model + `","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"grep","parameters":{}}}],"max_completion_tokens":500,"n":1,` +
		`"stream":true,"stream_options":{"include_usage":true},"nvext":{"agent_hints":{"speculative_prefill":true,"osl":64}}}`)
	p := schemas.PrefetchPayload{RequestID: "r", Model: model, WorkerID: 3, CacheSalt: "t-1", ExpiresAtMs: time.Now().Add(10 * time.Second).UnixMilli()}
	if !a.SubmitPrefetch(p, "wake-chat", body) {
		t.Fatal("not queued")
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "the chat call")
	acc := d.Accepted()
	if len(acc) != 1 || len(d.Rejected()) != 0 {
		t.Fatalf("accepted %d, rejected %+v", len(acc), d.Rejected())
	}
	c := acc[0]
	if c.Path != "/v1/chat/completions" || c.WorkerID != 3 {
		t.Fatalf("sent to %s for worker %d", c.Path, c.WorkerID)
	}
	b := c.Body
	for _, gone := range []string{"max_completion_tokens", "n", "stream_options"} {
		if _, ok := b[gone]; ok {
			t.Errorf("%s kept", gone)
		}
	}
	if b["max_tokens"] != json.Number("1") || b["stream"] != false || len(b["messages"].([]any)) != 2 || len(b["tools"].([]any)) != 1 {
		t.Fatalf("body %v", b)
	}
	nv := b["nvext"].(map[string]any)
	hints := nv["agent_hints"].(map[string]any)
	if _, ok := hints["speculative_prefill"]; ok || hints["osl"] != json.Number("64") || nv["cache_salt"] != "t-1" {
		t.Fatalf("nvext %v", nv)
	}
	if a.SubmitPrefetch(p, "wake-bad", json.RawMessage(`{"model":"m","prompt":[1]}`)) != true {
		t.Fatal("a body is queued whatever it holds; it is judged when the call is built")
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return value(a.Counters().Dropped, metrics.AdapterDropUnsupported) == 1 },
		"a body without messages dropped unsupported")
}

// TestLMCachePrefetch: a prefetch becomes one /l2/prefetch with the
// hint's model, the configured world size, its tokens and its salt; the
// 202 counts as a call. A world size LMCache has no layout for is refused
// (409) and not retried; a salt LMCache would refuse is never sent.
func TestLMCachePrefetch(t *testing.T) {
	l := lmcacheStandin(t, 2)
	a := run(t, Config{PrefetchTarget: TargetLMCache, LMCacheURL: l.URL, LMCacheWorldSize: 2})
	pool := sender(t)
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "w-1", Model: model, TokenIDs: tokens(600),
		CacheSalt: "tenant-b", ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "the prefetch call")
	acc := l.Accepted()
	if len(acc) != 1 || len(l.Rejected()) != 0 {
		t.Fatalf("accepted %+v, rejected %+v", acc, l.Rejected())
	}
	got := acc[0]
	if got.ModelName != model || got.WorldSize != 2 || got.CacheSalt != "tenant-b" || len(got.TokenIDs) != 600 ||
		got.TokenIDs[599] != 599*7 || got.Chunks != 2 {
		t.Fatalf("LMCache read %+v", got)
	}

	b := run(t, Config{PrefetchTarget: TargetLMCache, LMCacheURL: l.URL, LMCacheWorldSize: 4, RetryDelay: 10 * time.Millisecond})
	sendPrefetch(t, pool, b.Endpoint(), actions.Prefetch{RequestID: "w-2", Model: model, TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	sendPrefetch(t, pool, b.Endpoint(), actions.Prefetch{RequestID: "w-3", Model: model, TokenIDs: tokens(8), CacheSalt: "a@b",
		ExpiresAt: time.Now().Add(10 * time.Second)})
	c := b.Counters()
	natstest.Eventually(t, 5*time.Second, func() bool {
		return value(c.Failed, metrics.AdapterFailRefused) == 1 && value(c.Dropped, metrics.AdapterDropUnsupported) == 1
	}, "409 refused, the bad salt dropped")
	if rej := l.Rejected(); len(rej) != 1 || rej[0].Status != http.StatusConflict || c.Retries.Value() != 0 {
		t.Fatalf("rejected %+v, retries %d", rej, c.Retries.Value())
	}
	// A prompt named only by hashes (a Dynamo-sourced prefetch): no
	// target loads by hash, so it is dropped, never sent empty.
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "w-4", Model: model, SequenceHashes: []uint64{11, 12},
		SequenceBlockSize: 16, BlockHashes: []uint64{21, 22}, ExpiresAt: time.Now().Add(10 * time.Second)})
	natstest.Eventually(t, 5*time.Second, func() bool { return value(a.Counters().Dropped, metrics.AdapterDropUnsupported) == 1 },
		"the hash-only prefetch dropped")
	if n := len(l.Accepted()); n != 1 {
		t.Fatalf("LMCache called %d times, want the one tokens call", n)
	}
}

// TestEngineWarmUpCarriesSalt: on the engine target a salted prefetch
// carries cache_salt to SGLang's /generate and vLLM's /v1/completions,
// both of which take it (the stand-ins record no ignored field).
func TestEngineWarmUpCarriesSalt(t *testing.T) {
	for _, eng := range []string{EngineSGLang, EngineVLLM} {
		e := engine(t, "--engine", eng, "--model", model)
		a := run(t, Config{Engine: eng, EngineURL: e.URL})
		sendPrefetch(t, sender(t), a.Endpoint(), actions.Prefetch{RequestID: "salted", Model: model, TokenIDs: tokens(16),
			CacheSalt: "tenant-c", ExpiresAt: time.Now().Add(10 * time.Second)})
		natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "%s call", eng)
		s := stats(t, e)
		if len(s.Accepted) != 1 || len(s.Accepted[0].Ignored) != 0 || s.Accepted[0].Body["cache_salt"] != "tenant-c" {
			t.Fatalf("%s: accepted %+v, rejected %+v", eng, s.Accepted, s.Rejected)
		}
	}
}

// TestTargetsNeedWhatTheyCall: each target validates the URL it calls
// and a model name it needs; a retain without an engine is unsupported.
func TestTargetsNeedWhatTheyCall(t *testing.T) {
	for name, cfg := range map[string]Config{
		"unknown target":       {PrefetchTarget: "mooncake", Engine: EngineVLLM, EngineURL: "http://e"},
		"dynamo without URL":   {PrefetchTarget: TargetDynamo},
		"lmcache without URL":  {PrefetchTarget: TargetLMCache},
		"lmcache bad URL":      {PrefetchTarget: TargetLMCache, LMCacheURL: "127.0.0.1:8080"},
		"lmcache world -1":     {PrefetchTarget: TargetLMCache, LMCacheURL: "http://l", LMCacheWorldSize: -1},
		"engine without":       {PrefetchTarget: TargetEngine},
		"dynamo, bad engine":   {PrefetchTarget: TargetDynamo, FrontendURL: "http://f", Engine: "trt"},
		"dynamo, engine noURL": {PrefetchTarget: TargetDynamo, FrontendURL: "http://f", Engine: EngineVLLM},
	} {
		cfg.Bind = "tcp://127.0.0.1:*"
		if _, err := New(cfg); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	l := lmcacheStandin(t, 1)
	a := run(t, Config{PrefetchTarget: TargetLMCache, LMCacheURL: l.URL})
	pool := sender(t)
	sendRetain(t, pool, a.Endpoint(), actions.Retain{Trigger: "t", Model: model, TokenIDs: tokens(8), TTL: time.Second, Priority: 1,
		ClaimID: "hintstream/s", ExpiresAt: time.Now().Add(10 * time.Second)})
	sendPrefetch(t, pool, a.Endpoint(), actions.Prefetch{RequestID: "no-model", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(10 * time.Second)})
	c := a.Counters()
	natstest.Eventually(t, 5*time.Second, func() bool {
		return value(c.Dropped, metrics.AdapterDropUnsupported) == 1 && value(c.Dropped, metrics.AdapterDropNoModel) == 1
	}, "retain unsupported, model-less prefetch no_model")
	if n := len(l.Accepted()) + len(l.Rejected()); n != 0 {
		t.Fatalf("LMCache saw %d calls", n)
	}
}

// TestTargetStandinsRefuse: the Dynamo and LMCache stand-ins refuse what
// their sources refuse, with the status they answer: a test that passes
// against them says the adapter's bodies fit the schemas.
func TestTargetStandinsRefuse(t *testing.T) {
	d := dynamoStandin(t, map[uint64]uint32{7: 2})
	l := lmcacheStandin(t, 1)
	ok := `"model":"` + model + `","prompt":[1,2],"max_tokens":1`
	route := map[string]string{"x-dynamo-worker-instance-id": "7"}
	for _, c := range []struct {
		name, url, body string
		header          map[string]string
		status          int
	}{
		{"dynamo ok", d.URL + "/v1/completions", `{` + ok + `}`, route, 200},
		{"dynamo alias header", d.URL + "/v1/completions", `{` + ok + `}`, map[string]string{"x-worker-instance-id": "7", "x-dp-rank": "1"}, 200},
		{"dynamo unknown field", d.URL + "/v1/completions", `{` + ok + `,"kv_hints":{}}`, route, 400},
		{"dynamo unknown nvext field", d.URL + "/v1/completions", `{` + ok + `,"nvext":{"pin":true}}`, route, 422},
		{"dynamo token as string", d.URL + "/v1/completions", `{"model":"` + model + `","prompt":["1"],"max_tokens":1}`, route, 422},
		{"dynamo negative token", d.URL + "/v1/completions", `{"model":"` + model + `","prompt":[-1],"max_tokens":1}`, route, 422},
		{"dynamo max_tokens 0", d.URL + "/v1/completions", `{"model":"` + model + `","prompt":[1],"max_tokens":0}`, route, 400},
		{"dynamo max_tokens string", d.URL + "/v1/completions", `{"model":"` + model + `","prompt":[1],"max_tokens":"1"}`, route, 422},
		{"dynamo stream string", d.URL + "/v1/completions", `{` + ok + `,"stream":"no"}`, route, 422},
		{"dynamo empty model", d.URL + "/v1/completions", `{"model":" ","prompt":[1]}`, route, 400},
		{"dynamo unknown model", d.URL + "/v1/completions", `{"model":"x","prompt":[1]}`, route, 404},
		{"dynamo missing instance", d.URL + "/v1/completions", `{` + ok + `}`, map[string]string{"x-dynamo-worker-instance-id": "8"}, 500},
		{"dynamo dp rank out of range", d.URL + "/v1/completions", `{` + ok + `}`, map[string]string{"x-dynamo-worker-instance-id": "7", "x-dynamo-dp-rank": "2"}, 500},
		{"dynamo chat without messages", d.URL + "/v1/chat/completions", `{"model":"` + model + `","messages":[]}`, route, 400},
		{"dynamo chat prompt field", d.URL + "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"x"}],"prompt":[1]}`, route, 400},
		{"lmcache ok", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1,"token_ids":[1],"cache_salt":""}`, nil, 202},
		{"lmcache lax ints", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":"1","token_ids":[1.0,"2"],"extra":1}`, nil, 202},
		{"lmcache missing token_ids", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1}`, nil, 422},
		{"lmcache model as number", l.URL + "/l2/prefetch", `{"model_name":7,"world_size":1,"token_ids":[1]}`, nil, 422},
		{"lmcache fractional token", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1,"token_ids":[1.5]}`, nil, 422},
		{"lmcache null salt", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1,"token_ids":[1],"cache_salt":null}`, nil, 422},
		{"lmcache no layout", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":8,"token_ids":[1]}`, nil, 409},
		{"lmcache bad salt", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1,"token_ids":[1],"cache_salt":"a/b"}`, nil, 400},
		{"lmcache long salt", l.URL + "/l2/prefetch", `{"model_name":"` + model + `","world_size":1,"token_ids":[1],"cache_salt":"` + strings.Repeat("s", 129) + `"}`, nil, 400},
	} {
		if got := statusOf(t, c.url, c.body, c.header); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
}

// TestLMCacheSaltBounds: the salt bounds are LMCache's: 128 characters
// (Python's len, not bytes) and none of @ / \ NUL.
func TestLMCacheSaltBounds(t *testing.T) {
	for salt, ok := range map[string]bool{
		strings.Repeat("é", 128): true, strings.Repeat("s", 129): false,
		"a@b": false, "a/b": false, `a\b`: false, "a\x00b": false, "tenant-7_x.y": true,
	} {
		_, err := lmcacheCall("http://l", 1, warmUp{tokens: tokens(4), model: model, cacheSalt: salt})
		if (err == nil) != ok {
			t.Errorf("salt %q: err %v, want accepted %v", salt, err, ok)
		}
	}
	if _, err := lmcacheCall("http://l", 1, warmUp{tokens: make([]uint32, lmcacheMaxPrefetchTokens+1), model: model}); err == nil {
		t.Error("a prompt past LMCache's token cap was built")
	}
}
