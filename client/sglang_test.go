package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
)

// Response bodies in the shapes SGLang's http_server.py serves (see
// sglang.go for the file and commit); the layout is the one
// test_hicache_l3_object_layout.py asserts, plus an MHA KV pool as in
// shared/vectors/sglang_pages_and_keys.json.
const (
	sglModelInfo = `{"model_path":"/models/Qwen3-8B","served_model_name":"Qwen/Qwen3-8B","tokenizer_path":"/models/Qwen3-8B",
 "is_generation":true,"preferred_sampling_params":null,"weight_version":"default","load_format":"auto",
 "reasoning_parser":null,"tool_call_parser":"qwen25","disaggregation_mode":"null",
 "has_image_understanding":false,"has_audio_understanding":false,"model_type":"qwen3","architectures":["Qwen3ForCausalLM"]}`
	sglServerInfo = `{"model_path":"/models/Qwen3-8B","served_model_name":"Qwen/Qwen3-8B","page_size":64,"dp_size":1,"tp_size":2,
 "enable_hierarchical_cache":true,"hicache_storage_backend":"mooncake","launch_command":"python -m sglang.launch_server ...",
 "max_req_input_len":40960,"startup_time":1764470000.5,"internal_states":[{"last_gen_throughput":0.0}],
 "version":"0.5.9","frontend":"python","kv_events":null}`
	sglLayout = `{"backend":"mooncake","page_size":64,"hicache_object_layout":{"key_prefix":"tag_my-model","is_mla_backend":false,
 "pp_rank":0,"pp_size":1,"pools":[{"pool":"kv","suffixes":["_0_k","_0_v","_1_k","_1_v"],"hit_policy":"all_pages"},
 {"pool":"deepseek_v4_c4_state","suffixes":["__deepseek_v4_c4_state"],"hit_policy":"trailing_pages","trailing_pages":2}]}}`
	sglLayoutOff = `{"enabled":false,"backend":null,"hicache_object_layout":{"pools":[]}}`
)

type fakeSGLang struct {
	mu     sync.Mutex
	layout string // "" answers 404
	calls  map[string]int
}

func (f *fakeSGLang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[r.URL.Path]++
	body := map[string]string{SGLangModelInfoPath: sglModelInfo, SGLangServerInfoPath: sglServerInfo, SGLangLayoutPath: f.layout}[r.URL.Path]
	if r.Method != http.MethodGet || body == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

func (f *fakeSGLang) set(layout string) { f.mu.Lock(); f.layout = layout; f.mu.Unlock() }

func startSGLang(t *testing.T, layout string) (*fakeSGLang, string) {
	t.Helper()
	f := &fakeSGLang{layout: layout, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func TestSGLangRecord(t *testing.T) {
	f, url := startSGLang(t, sglLayout)
	s := &SGLang{BaseURL: url + "/", Base: schemas.WorkerRecord{WorkerID: 7, HintEndpoints: []string{"tcp://10.0.0.7:5570"}}}
	rec, err := s.Record(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Model != "Qwen/Qwen3-8B" || rec.KvBlockSize != 64 || rec.WorkerID != 7 || len(rec.HintEndpoints) != 1 {
		t.Fatalf("record %+v", rec)
	}
	l := rec.ObjectLayout
	if l == nil || l.Backend != "mooncake" || l.PageSize != 64 || l.HicacheObjectLayout.KeyPrefix != "tag_my-model" ||
		len(l.HicacheObjectLayout.Pools) != 2 || l.HicacheObjectLayout.Pools[1].TrailingPages != 2 ||
		l.HicacheObjectLayout.Pools[0].Suffixes[3] != "_1_v" {
		t.Fatalf("layout %+v", l)
	}
	if err := rec.Validate(); err != nil {
		t.Fatalf("the record hintstream would read back is invalid: %v", err)
	}
	// Flags win over what SGLang reports, and spare the calls.
	s.Base.Model, s.Base.KvBlockSize = "served-as", 16
	if rec, err = s.Record(context.Background()); err != nil || rec.Model != "served-as" || rec.KvBlockSize != 16 {
		t.Fatalf("flags did not win: %+v %v", rec, err)
	}
	if f.calls[SGLangModelInfoPath] != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	// No L3 backend, then an SGLang without the endpoint: no layout.
	for _, layout := range []string{sglLayoutOff, ""} {
		f.set(layout)
		if rec, err = s.Record(context.Background()); err != nil || rec.ObjectLayout != nil {
			t.Fatalf("layout %q: %+v %v", layout, rec.ObjectLayout, err)
		}
	}
}

func TestSGLangRecordErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == SGLangModelInfoPath {
			_, _ = w.Write([]byte(`{"served_model_name":`)) // cut short
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := &SGLang{BaseURL: srv.URL}
	if _, err := s.Record(context.Background()); !errors.Is(err, ErrSGLang) {
		t.Fatalf("truncated model_info: %v", err)
	}
	s.Base.Model = "m"
	if _, err := s.Record(context.Background()); !errors.Is(err, ErrSGLang) {
		t.Fatalf("503 server_info: %v", err)
	}
	srv.Close()
	if _, err := s.Record(context.Background()); !errors.Is(err, ErrSGLang) {
		t.Fatalf("server gone: %v", err)
	}
}

func TestSGLangDpSizeMustMatchEndpoints(t *testing.T) {
	_, url := startSGLang(t, sglLayout)
	s := &SGLang{BaseURL: url, Base: schemas.WorkerRecord{WorkerID: 7, HintEndpoints: []string{"tcp://h:1", "tcp://h:2"}}}
	if _, err := s.Record(context.Background()); !errors.Is(err, ErrSGLang) {
		t.Fatalf("dp_size 1 with two endpoints: %v", err)
	}
}

// TestRegisterFromSGLang: Register with SGLang as the record source; a
// worker restarted with another layout replaces its record.
func TestRegisterFromSGLang(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	reg, _ := openRegistry(t, js)
	f, url := startSGLang(t, sglLayout)
	s := &SGLang{BaseURL: url, Base: schemas.WorkerRecord{WorkerID: 4, HintEndpoints: []string{"tcp://127.0.0.1:5570"}}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- Register(ctx, js, s.Record, WithInterval(MinRegisterInterval)) }()
	natstest.Eventually(t, 10*time.Second, func() bool {
		r, ok := reg.Get(4)
		return ok && r.Model == "Qwen/Qwen3-8B" && r.ObjectLayout != nil && r.ObjectLayout.HicacheObjectLayout.KeyPrefix == "tag_my-model"
	}, "worker 4 registered from SGLang")
	f.set(strings.Replace(sglLayout, "tag_my-model", "tag_restarted", 1))
	natstest.Eventually(t, 10*time.Second, func() bool {
		r, ok := reg.Get(4)
		return ok && r.ObjectLayout != nil && r.ObjectLayout.HicacheObjectLayout.KeyPrefix == "tag_restarted"
	}, "worker 4's record replaced after the restart")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
