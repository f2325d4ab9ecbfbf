package schemas

import "fmt"

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

// Validate checks what hintstream needs of a record before using it,
// under the default EndpointRules (tcp:// only, at most DefaultMaxDPRanks
// endpoints). A refusal is a *RecordError.
func (w *WorkerRecord) Validate() error { return w.ValidateWith(EndpointRules{}) }

// ValidateWith is Validate under rules. A refusal is a *RecordError whose
// Reason is one of the Reason* constants.
func (w *WorkerRecord) ValidateWith(rules EndpointRules) error {
	rules = rules.withDefaults()
	if w.KvBlockSize == 0 {
		return recordErr(w, ReasonBlockSize, "kv_block_size must be positive")
	}
	if len(w.HintEndpoints) == 0 {
		return recordErr(w, ReasonNoEndpoints, "no hint_endpoints")
	}
	if n := len(w.HintEndpoints); n > rules.MaxDPRanks {
		return recordErr(w, ReasonTooManyEndpoints, fmt.Sprintf("%d hint_endpoints, more than the %d dp ranks allowed (--max-dp-ranks)", n, rules.MaxDPRanks))
	}
	if k := w.HintCurvePublicKey; k != "" && len(k) != 40 {
		return recordErr(w, ReasonCurveKey, "hint_curve_public_key must be a 40-character Z85 key")
	}
	for i, ep := range w.HintEndpoints {
		if reason, why := rules.check(ep); reason != "" {
			return recordErr(w, reason, fmt.Sprintf("hint_endpoints[%d] %.80q: %s", i, ep, why))
		}
	}
	return w.checkLayout() // layout_limits.go
}

// DecodeWorkerRecordWith decodes a registry entry (JSON) and validates it
// under rules. A refusal is a *DecodeError of kind "worker" wrapping the
// *RecordError (errors.As finds its Reason).
func (l Limits) DecodeWorkerRecordWith(data []byte, rules EndpointRules) (*WorkerRecord, error) {
	const kind = "worker"
	l = l.withDefaults()
	var w WorkerRecord
	if err := l.decodeJSON(kind, data, &w); err != nil {
		return nil, err
	}
	if err := w.ValidateWith(rules); err != nil {
		return nil, malformed(kind, "invalid worker record", err)
	}
	return &w, nil
}
