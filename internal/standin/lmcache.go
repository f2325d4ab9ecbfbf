package standin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// LMCache is a Go stand-in (net/http/httptest on 127.0.0.1) for LMCache's
// multi-process server route POST /l2/prefetch, written from
// prefetch_to_l1 and PrefetchRequest in
// lmcache/v1/multiprocess/http_apis/l2_api.py (LMCache/LMCache; see
// emit/adapter/lmcache_prefetch.go for the version):
//
//   - the body is a stdlib dataclass FastAPI validates with pydantic in
//     lax mode: model_name str, world_size int, token_ids list[int]
//     required, cache_salt str defaulting to ""; a missing field, null, or
//     a value that does not coerce (a number for a str, a fraction or a
//     word for an int) is 422; an integral float or a numeric string
//     passes for an int (lax mode); unknown members are ignored;
//   - more than 1,000,000 token ids is 400 (_MAX_PREFETCH_TOKENS);
//   - a cache_salt holding '@', '/', '\' or NUL, or longer than 128
//     characters, is 400 (IPCCacheServerKey);
//   - no layout registered for (model_name, world_size) is 409;
//   - otherwise 202 {"request_id", "chunks", "status": "submitted"}, or
//     {"chunks": 0, "status": "noop"} below one chunk of ChunkSize tokens.
type LMCache struct {
	*httptest.Server
	// ChunkSize is LMCache's chunk_size (256 by default).
	ChunkSize int
	layouts   map[lmcacheLayout]bool
	ledger[LMCachePrefetch]
}

type lmcacheLayout struct {
	model     string
	worldSize int64
}

// LMCachePrefetch is one /l2/prefetch the stand-in accepted, as LMCache
// read it.
type LMCachePrefetch struct {
	ModelName string
	WorldSize int64
	TokenIDs  []int64
	CacheSalt string
	Chunks    int
}

// NewLMCache starts an LMCache stand-in on which model has registered its
// KV layout at each of worldSizes.
func NewLMCache(model string, worldSizes ...int64) *LMCache {
	l := &LMCache{ChunkSize: 256, layouts: map[lmcacheLayout]bool{}}
	for _, w := range worldSizes {
		l.layouts[lmcacheLayout{model, w}] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /l2/prefetch", l.serve)
	l.Server = httptest.NewServer(mux)
	return l
}

func (l *LMCache) serve(w http.ResponseWriter, r *http.Request) {
	p, status, err := l.check(r)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		l.reject(status, err)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"detail": err.Error()})
		return
	}
	n := l.accept(p)
	w.WriteHeader(http.StatusAccepted)
	if p.Chunks == 0 {
		fmt.Fprint(w, `{"chunks":0,"status":"noop"}`)
		return
	}
	fmt.Fprintf(w, `{"request_id":"warm-%d","chunks":%d,"status":"submitted"}`, n, p.Chunks)
}

func (l *LMCache) check(r *http.Request) (LMCachePrefetch, int, error) {
	var p LMCachePrefetch
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return p, http.StatusBadRequest, err
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body == nil {
		return p, http.StatusUnprocessableEntity, fmt.Errorf("body: Input should be a valid dictionary or object")
	}
	var ok bool
	switch v, present := body["model_name"]; {
	case !present:
		return p, http.StatusUnprocessableEntity, fmt.Errorf("model_name: Field required")
	default:
		if p.ModelName, ok = v.(string); !ok {
			return p, http.StatusUnprocessableEntity, fmt.Errorf("model_name: Input should be a valid string")
		}
	}
	v, present := body["world_size"]
	if !present {
		return p, http.StatusUnprocessableEntity, fmt.Errorf("world_size: Field required")
	}
	if p.WorldSize, ok = laxInt(v); !ok {
		return p, http.StatusUnprocessableEntity, fmt.Errorf("world_size: Input should be a valid integer")
	}
	v, present = body["token_ids"]
	if !present {
		return p, http.StatusUnprocessableEntity, fmt.Errorf("token_ids: Field required")
	}
	list, ok := v.([]any)
	if !ok {
		return p, http.StatusUnprocessableEntity, fmt.Errorf("token_ids: Input should be a valid list")
	}
	p.TokenIDs = make([]int64, len(list))
	for i, t := range list {
		if p.TokenIDs[i], ok = laxInt(t); !ok {
			return p, http.StatusUnprocessableEntity, fmt.Errorf("token_ids.%d: Input should be a valid integer", i)
		}
	}
	if v, present := body["cache_salt"]; present {
		if p.CacheSalt, ok = v.(string); !ok {
			return p, http.StatusUnprocessableEntity, fmt.Errorf("cache_salt: Input should be a valid string")
		}
	}
	if len(p.TokenIDs) > 1_000_000 {
		return p, http.StatusBadRequest, fmt.Errorf("too many token_ids in a single request (limit=1000000, got=%d)", len(p.TokenIDs))
	}
	if !l.layouts[lmcacheLayout{p.ModelName, p.WorldSize}] {
		return p, http.StatusConflict, fmt.Errorf("no layout registered for model_name=%q world_size=%d; the model has not allocated KV cache on this node yet", p.ModelName, p.WorldSize)
	}
	if strings.ContainsAny(p.CacheSalt, "@/\\\x00") {
		return p, http.StatusBadRequest, fmt.Errorf("cache_salt must not contain a forbidden character (got %q)", p.CacheSalt)
	}
	if n := len([]rune(p.CacheSalt)); n > 128 {
		return p, http.StatusBadRequest, fmt.Errorf("cache_salt exceeds max length 128 (got %d)", n)
	}
	p.Chunks = len(p.TokenIDs) / l.ChunkSize
	return p, 0, nil
}

// laxInt is v as pydantic's lax mode reads an int from JSON: an integer,
// a float without fraction, a bool, or a string holding an integer.
func laxInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return i, err == nil
	}
	return 0, false
}
