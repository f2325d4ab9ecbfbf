package actions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/hintstream/hintstream/schemas"
)

// Hit policies of a HiCache object layout pool.
const (
	HitAllPages      = "all_pages"      // one object per suffix for every full page
	HitTrailingPages = "trailing_pages" // only for the last TrailingPages full pages
)

// ErrNoLayout is matched (errors.Is) by ObjectKeys' errors for a layout
// that names no Mooncake objects: pins for that worker are impossible.
var ErrNoLayout = errors.New("actions: no usable object layout")

// Namespace is the cache namespace SGLang seeds a request's storage page
// hashes with: its extra_key (the request's extra_key with the LoRA
// adapter's lora_id appended, Req.__init__ in
// python/sglang/srt/managers/schedule_batch.py) and its cache_salt. An
// empty string is absent: hintstream's events cannot tell an absent part
// from an empty one, which SGLang would hash differently.
type Namespace struct {
	ExtraKey  string
	CacheSalt string
}

// seed is the prior digest SGLang starts a namespaced chain from, and
// whether there is one (no namespace: an unseeded chain, the keys of
// before the seeding). storage_namespace_seed in
// python/sglang/srt/mem_cache/utils.py, as SGLang PR #38577 (merged
// 2026-09-08) made it:
//
//	SHA-256("sglang-cache-namespace-v1" || part(extra_key) || part(cache_salt))
//	part(absent) = 0x00, part(s) = 0x01 || u64le(len(utf8 s)) || utf8 s
//
// The index holds that file from a fork only (no sgl-project/sglang
// commit of it is stored); testdata/sglang/salted_pages.json holds
// vectors written from it in Python (scripts/sglang-salted-vectors.py).
func (ns Namespace) seed() ([sha256.Size]byte, bool) {
	if ns.ExtraKey == "" && ns.CacheSalt == "" {
		return [sha256.Size]byte{}, false
	}
	h := sha256.New()
	h.Write([]byte("sglang-cache-namespace-v1"))
	var n [8]byte
	for _, part := range [...]string{ns.ExtraKey, ns.CacheSalt} {
		if part == "" {
			h.Write([]byte{0})
			continue
		}
		binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
		h.Write([]byte{1})
		h.Write(n[:])
		h.Write([]byte(part))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out, true
}

// SGLangPageHashes returns SGLang HiCache's page hashes of tokens for a
// request without a cache namespace (SGLangPageHashesIn with none).
func SGLangPageHashes(tokens []uint32, pageSize int) []string {
	return SGLangPageHashesIn(tokens, pageSize, Namespace{})
}

// SGLangPageHashesIn returns SGLang HiCache's storage page hashes of
// tokens under ns, one per full page of pageSize tokens (a partial
// trailing page has none), as 64 lower-case hex digits:
//
//	page_hash[0] = hex(SHA-256(seed || u32le tokens of page 0))
//	page_hash[i] = hex(SHA-256(bytes.fromhex(page_hash[i-1]) || u32le tokens of page i))
//
// where seed is ns's namespace digest, or nothing for no namespace
// (hash_pages_to_hex_blob in
// python/sglang/srt/mem_cache/cpp_utils/hash_binding.cpp at
// 30a90c4f837192e0aa4dafcc12e38c315fb4185c). pageSize <= 0 gives nil.
func SGLangPageHashesIn(tokens []uint32, pageSize int, ns Namespace) []string {
	if pageSize <= 0 {
		return nil
	}
	n := len(tokens) / pageSize
	if n == 0 {
		return nil
	}
	// One string holds every hash so that n hashes cost two allocations.
	all := make([]byte, n*2*sha256.Size)
	buf := make([]byte, sha256.Size+4*pageSize)
	prev, seeded := ns.seed()
	for i := range n {
		in := buf[sha256.Size:]
		if i > 0 || seeded {
			copy(buf, prev[:])
			in = buf
		}
		page := tokens[i*pageSize : (i+1)*pageSize]
		for j, t := range page {
			binary.LittleEndian.PutUint32(buf[sha256.Size+4*j:], t)
		}
		prev = sha256.Sum256(in)
		hex.Encode(all[i*2*sha256.Size:], prev[:])
	}
	s := string(all)
	out := make([]string, n)
	for i := range out {
		out[i] = s[i*2*sha256.Size : (i+1)*2*sha256.Size]
	}
	return out
}

// SGLangEventHash is the block hash SGLang puts in its KV events for the
// page of pageHash: its first 16 hex digits as an int64 (two's
// complement). It holds for a request without a namespace: SGLang seeds
// a salted request's event hashes otherwise than its storage hashes
// (compute_node_event_hash_values in python/sglang/srt/mem_cache/utils.py). It returns 0 when pageHash does not start with 16 hex
// digits, which SGLangPageHashes never produces.
func SGLangEventHash(pageHash string) int64 {
	if len(pageHash) < 16 {
		return 0
	}
	u, err := strconv.ParseUint(pageHash[:16], 16, 64)
	if err != nil {
		return 0
	}
	return int64(u)
}

// ObjectKeys returns the Mooncake object keys that hold the KV of tokens
// for a request without a cache namespace (ObjectKeysIn with none).
func ObjectKeys(layout *schemas.ObjectLayout, tokens []uint32) ([]string, error) {
	return ObjectKeysIn(layout, tokens, Namespace{})
}

// ObjectKeysIn returns the Mooncake object keys that hold the KV of
// tokens under layout, for a request in namespace ns: key_prefix + "_" + page_hash + suffix, pool by pool in
// layout order, within a pool page by page, within a page suffix by
// suffix. An all_pages pool (or one with no hit_policy) covers every full
// page, a trailing_pages pool only the last trailing_pages full pages.
//
// It fails with ErrNoLayout (wrapped with the reason) for a nil layout,
// page_size 0, an empty key_prefix, no pools, a pool without suffixes, an
// unknown hit_policy or a trailing_pages pool with trailing_pages < 1.
// Fewer tokens than one page give no keys and no error.
func ObjectKeysIn(layout *schemas.ObjectLayout, tokens []uint32, ns Namespace) ([]string, error) {
	if err := checkLayout(layout); err != nil {
		return nil, err
	}
	hashes := SGLangPageHashesIn(tokens, int(layout.PageSize), ns)
	if len(hashes) == 0 {
		return nil, nil
	}
	hl := layout.HicacheObjectLayout
	type span struct {
		pool  *schemas.LayoutPool
		first int // first page covered
	}
	spans := make([]span, len(hl.Pools))
	count, size := 0, 0
	for i := range hl.Pools {
		pl := &hl.Pools[i]
		first := 0
		if pl.HitPolicy == HitTrailingPages {
			first = max(len(hashes)-pl.TrailingPages, 0)
		}
		spans[i] = span{pl, first}
		pages := len(hashes) - first
		for _, suf := range pl.Suffixes {
			count += pages
			size += pages * (len(hl.KeyPrefix) + 1 + 2*sha256.Size + len(suf))
		}
	}
	// As in SGLangPageHashes: all keys share one backing string.
	buf := make([]byte, 0, size)
	ends := make([]int, 0, count)
	for _, sp := range spans {
		for _, h := range hashes[sp.first:] {
			for _, suf := range sp.pool.Suffixes {
				buf = append(buf, hl.KeyPrefix...)
				buf = append(buf, '_')
				buf = append(buf, h...)
				buf = append(buf, suf...)
				ends = append(ends, len(buf))
			}
		}
	}
	s := string(buf)
	keys := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		keys[i] = s[start:end]
		start = end
	}
	return keys, nil
}

func checkLayout(l *schemas.ObjectLayout) error {
	if l == nil {
		return fmt.Errorf("%w: worker reports none", ErrNoLayout)
	}
	hl := &l.HicacheObjectLayout
	switch {
	case l.PageSize == 0:
		return fmt.Errorf("%w: page_size is 0", ErrNoLayout)
	case hl.KeyPrefix == "":
		return fmt.Errorf("%w: empty key_prefix", ErrNoLayout)
	case len(hl.Pools) == 0:
		return fmt.Errorf("%w: no pools", ErrNoLayout)
	}
	for i, p := range hl.Pools {
		if len(p.Suffixes) == 0 {
			return fmt.Errorf("%w: pool %d (%q) has no suffixes", ErrNoLayout, i, p.Pool)
		}
		switch p.HitPolicy {
		case HitAllPages, "":
		case HitTrailingPages:
			if p.TrailingPages < 1 {
				return fmt.Errorf("%w: pool %d (%q) is trailing_pages with trailing_pages %d", ErrNoLayout, i, p.Pool, p.TrailingPages)
			}
		default:
			return fmt.Errorf("%w: pool %d (%q) has unknown hit_policy %q", ErrNoLayout, i, p.Pool, p.HitPolicy)
		}
	}
	return nil
}
