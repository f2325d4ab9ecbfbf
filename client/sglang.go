package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hintstream/hintstream/schemas"
)

// SGLang's HTTP API, as python/sglang/srt/entrypoints/http_server.py
// serves it at sgl-project/sglang commit
// 71188d36bc4536659f38ef0bb706afc9f2f0dde8:
//
//   - GET /model_info: {"model_path", "served_model_name", ...}
//     (/get_model_info is its deprecated alias);
//   - GET /server_info: the resolved server arguments, among them
//     "page_size" and "dp_size" (which must equal the number of hint
//     endpoints, one per dp rank), plus scheduler state
//     (/get_server_info is its deprecated alias);
//   - GET /get_hicache_l3_cache_layout: the first rank's L3 layout,
//     {"backend": "mooncake", "page_size": N, "hicache_object_layout":
//     {"key_prefix", "is_mla_backend", "pp_rank", "pp_size", "pools":
//     [{"pool", "suffixes", "hit_policy"[, "trailing_pages"]}]}}, or
//     {"enabled": false, "backend": null, "hicache_object_layout":
//     {"pools": []}} without an L3 backend. The layout's shape is the
//     one test/registered/hicache/test_hicache_l3_object_layout.py (same
//     commit) asserts of MooncakeStore.describe_l3_object_layout.
//
// An SGLang older than the layout endpoint answers it 404: the record
// then has no object_layout (pins need one; prefetches do not).
const (
	SGLangModelInfoPath  = "/model_info"
	SGLangServerInfoPath = "/server_info"
	SGLangLayoutPath     = "/get_hicache_l3_cache_layout"
)

// maxSGLangBody bounds what is read of one SGLang answer (server_info
// carries every server argument: tens of KiB).
const maxSGLangBody = 8 << 20

// ErrSGLang wraps every failure to read the worker's SGLang API.
var ErrSGLang = errors.New("client: SGLang API")

// SGLang builds a worker's record from its SGLang HTTP API.
type SGLang struct {
	// BaseURL is the server's address, e.g. http://127.0.0.1:30000.
	BaseURL string
	// HTTP is the client used (default http.DefaultClient); the context
	// given to Record bounds each call.
	HTTP *http.Client
	// Base is the record's part that SGLang cannot tell: WorkerID,
	// HintEndpoints, HintCurvePublicKey. A Model or KvBlockSize set here
	// wins over what SGLang reports.
	Base schemas.WorkerRecord
}

// Record returns the current record: Base, plus the served model name,
// the page size as kv_block_size and the L3 object layout when SGLang
// has one. It is a RecordFunc for Register.
func (s *SGLang) Record(ctx context.Context) (schemas.WorkerRecord, error) {
	rec := s.Base
	rec.HintEndpoints = append([]string(nil), s.Base.HintEndpoints...)
	if rec.Model == "" {
		var mi struct {
			ModelPath       string `json:"model_path"`
			ServedModelName string `json:"served_model_name"`
		}
		if err := s.get(ctx, SGLangModelInfoPath, &mi); err != nil {
			return rec, err
		}
		rec.Model = mi.ServedModelName
		if rec.Model == "" {
			rec.Model = mi.ModelPath
		}
	}
	var si struct {
		PageSize *uint32 `json:"page_size"`
		DpSize   int     `json:"dp_size"`
	}
	if err := s.get(ctx, SGLangServerInfoPath, &si); err != nil {
		return rec, err
	}
	if rec.KvBlockSize == 0 {
		if si.PageSize == nil || *si.PageSize == 0 {
			return rec, fmt.Errorf("%w: %s has no page_size", ErrSGLang, SGLangServerInfoPath)
		}
		rec.KvBlockSize = *si.PageSize
	}
	if si.DpSize > 0 && si.DpSize != len(rec.HintEndpoints) {
		// hint_endpoints[i] is dp rank i's socket: a prefetch for rank
		// i would reach another rank's scheduler.
		return rec, fmt.Errorf("%w: dp_size %d but %d hint endpoints", ErrSGLang, si.DpSize, len(rec.HintEndpoints))
	}
	var layout struct {
		schemas.ObjectLayout
		Enabled *bool `json:"enabled"`
	}
	err := s.get(ctx, SGLangLayoutPath, &layout)
	var nf notFound
	switch {
	case errors.As(err, &nf):
		// No such endpoint: an SGLang without it; no layout.
	case err != nil:
		return rec, err
	case (layout.Enabled == nil || *layout.Enabled) && layout.Backend != "" &&
		len(layout.HicacheObjectLayout.Pools) > 0:
		l := layout.ObjectLayout
		rec.ObjectLayout = &l
	}
	return rec, nil
}

// notFound is a 404 answer.
type notFound struct{ path string }

func (n notFound) Error() string { return fmt.Sprintf("%v: %s: 404 Not Found", ErrSGLang, n.path) }
func (n notFound) Unwrap() error { return ErrSGLang }

func (s *SGLang) get(ctx context.Context, path string, v any) error {
	url := strings.TrimRight(s.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSGLang, err)
	}
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSGLang, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return notFound{path}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s: %s", ErrSGLang, path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxSGLangBody)).Decode(v); err != nil {
		return fmt.Errorf("%w: GET %s: %v", ErrSGLang, path, err)
	}
	return nil
}

// SameHostRedirects is an http.Client CheckRedirect that follows a
// redirect only to the host (and port) of the original request: the
// engine API is on the worker, and a record read from elsewhere would
// name someone else's model, layout or endpoints.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: stopped after 10 redirects", ErrSGLang)
	}
	if orig := via[0].URL; req.URL.Host != orig.Host || req.URL.Scheme != orig.Scheme {
		return fmt.Errorf("%w: redirect from %s to another host %s refused", ErrSGLang, orig.Host, req.URL.Host)
	}
	return nil
}
