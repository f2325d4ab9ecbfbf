package schemas

import (
	"fmt"
	"strings"
)

// WorkerRecord is a worker's entry in the hintstream_workers KV bucket,
// keyed by its worker id in decimal.
type WorkerRecord struct {
	WorkerID    uint64 `json:"worker_id"`
	Model       string `json:"model"`
	KvBlockSize uint32 `json:"kv_block_size"`
	// HintEndpoints[i] is the PULL socket of dp rank i's scheduler.
	HintEndpoints []string      `json:"hint_endpoints"`
	ObjectLayout  *ObjectLayout `json:"object_layout,omitempty"`
	// HintCurvePublicKey is the CURVE server key (Z85, 40 characters) of
	// the worker's hint sockets; empty: plain text.
	HintCurvePublicKey string `json:"hint_curve_public_key,omitempty"`
}

// ObjectLayout is the body SGLang reports for its L3 (Mooncake) layout.
type ObjectLayout struct {
	Backend             string              `json:"backend,omitempty"`
	PageSize            uint32              `json:"page_size"`
	HicacheObjectLayout HicacheObjectLayout `json:"hicache_object_layout"`
}

// HicacheObjectLayout names the Mooncake objects that hold one KV page.
type HicacheObjectLayout struct {
	KeyPrefix    string       `json:"key_prefix"`
	IsMLABackend bool         `json:"is_mla_backend"`
	PpRank       int          `json:"pp_rank"`
	PpSize       int          `json:"pp_size"`
	Pools        []LayoutPool `json:"pools"`
}

// LayoutPool is one pool of per-page objects; a "trailing_pages" pool
// covers only the last TrailingPages full pages.
type LayoutPool struct {
	Pool          string   `json:"pool"`
	Suffixes      []string `json:"suffixes"`
	HitPolicy     string   `json:"hit_policy"`
	TrailingPages int      `json:"trailing_pages,omitempty"`
}

// Validate checks what hintstream needs of a record before using it.
func (w *WorkerRecord) Validate() error {
	if w.KvBlockSize == 0 {
		return fmt.Errorf("worker %d: kv_block_size must be positive", w.WorkerID)
	}
	if len(w.HintEndpoints) == 0 {
		return fmt.Errorf("worker %d: no hint_endpoints", w.WorkerID)
	}
	if k := w.HintCurvePublicKey; k != "" && len(k) != 40 {
		return fmt.Errorf("worker %d: hint_curve_public_key must be a 40-character Z85 key", w.WorkerID)
	}
	for i, ep := range w.HintEndpoints {
		if !validEndpoint(ep) {
			return fmt.Errorf("worker %d: hint_endpoints[%d] %q is not a tcp:// or ipc:// ZMQ endpoint", w.WorkerID, i, ep)
		}
	}
	return nil
}

func validEndpoint(ep string) bool {
	for _, p := range []string{"tcp://", "ipc://", "inproc://"} {
		if strings.HasPrefix(ep, p) && len(ep) > len(p) {
			return true
		}
	}
	return false
}
