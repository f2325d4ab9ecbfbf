package schemas

import "fmt"

// Layout caps. A record's object layout multiplies into every pin: a
// pin names pages × suffixes keys of up to MaxObjectKeyLen bytes each,
// so a record with 20,000 suffixes and page_size 1 made one tool call on
// a 5,000-token prompt cost each member about 7 GB. The caps leave
// room for any layout SGLang reports (shared/vectors/sglang_pages_and_keys.json:
// 4 suffixes at page 16 for MHA TP 2, 2 at page 64 for MLA; MHA at TP 64
// is 128) and refuse the rest where the record enters.
const (
	// MaxLayoutSuffixes is the most key suffixes a layout may list over
	// all its pools (each one a Mooncake object per page).
	MaxLayoutSuffixes = 256
	// MaxLayoutKeysPerToken bounds suffixes / page_size: the objects per
	// prompt token a pin would name.
	MaxLayoutKeysPerToken = 16
	// MaxLayoutPageSize is the largest page_size taken, in tokens.
	MaxLayoutPageSize = 1 << 16
	// MaxObjectKeyLen is the longest object key a layout may produce,
	// key_prefix + "_" + 64 hex digits + suffix, in bytes.
	MaxObjectKeyLen = 512
	// MaxLayoutPools is the most pools a layout may list.
	MaxLayoutPools = 64
)

// Reasons a record's layout is refused (RecordError.Reason).
const (
	ReasonLayoutPageSize = "layout_bad_page_size"
	ReasonLayoutSuffixes = "layout_too_many_suffixes"
	ReasonLayoutKeyLen   = "layout_key_too_long"
)

// pageHashHexLen is the length of a page hash in an object key: SHA-256
// in hex.
const pageHashHexLen = 64

// checkLayout refuses a layout past the caps above; nil passes.
func (w *WorkerRecord) checkLayout() error {
	l := w.ObjectLayout
	if l == nil {
		return nil
	}
	// page_size 0 is taken: the layout is then unusable and the worker
	// gets no pins (actions.checkLayout), which costs nothing.
	if l.PageSize > MaxLayoutPageSize {
		return recordErr(w, ReasonLayoutPageSize, fmt.Sprintf("object_layout.page_size %d: at most %d", l.PageSize, MaxLayoutPageSize))
	}
	h := &l.HicacheObjectLayout
	if len(h.Pools) > MaxLayoutPools {
		return recordErr(w, ReasonLayoutSuffixes, fmt.Sprintf("%d pools, more than %d", len(h.Pools), MaxLayoutPools))
	}
	n, longest := 0, 0
	for _, p := range h.Pools {
		n += len(p.Suffixes)
		for _, s := range p.Suffixes {
			longest = max(longest, len(s))
		}
	}
	if n > MaxLayoutSuffixes || (l.PageSize > 0 && uint64(n) > uint64(MaxLayoutKeysPerToken)*uint64(l.PageSize)) {
		return recordErr(w, ReasonLayoutSuffixes, fmt.Sprintf("%d suffixes at page_size %d: at most %d, and at most %d per token",
			n, l.PageSize, MaxLayoutSuffixes, MaxLayoutKeysPerToken))
	}
	if k := len(h.KeyPrefix) + 1 + pageHashHexLen + longest; k > MaxObjectKeyLen {
		return recordErr(w, ReasonLayoutKeyLen, fmt.Sprintf("object keys of %d bytes, more than %d", k, MaxObjectKeyLen))
	}
	return nil
}
