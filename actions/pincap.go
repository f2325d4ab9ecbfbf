package actions

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	"github.com/hintstream/hintstream/schemas"
)

// The size of one pin is capped where its keys are made, before they are
// allocated: a worker layout of 20,000 suffixes and page_size 1 turned a
// 5,000-token prompt into 100M keys (~7 GB) on every member. A pin past
// either cap is cut to the leading pages whose keys fit, not split into
// several messages: a prefix cache hit needs a prompt's pages from the
// first one on, so the leading pages are those worth keeping, and a
// split would still make one response cost memory and master work in
// proportion to what a record claims. The cut is counted (pins.cut).
const (
	// DefaultMaxPinKeys caps the keys of one pin. A 100k-token prompt
	// with 64-token pages and 16 suffixes is 25,120 keys.
	DefaultMaxPinKeys = 32768
	// DefaultMaxPinBytes caps the bytes of one pin's keys (the strings,
	// as encoded in the payload); that prompt's keys are ~2.2 MB.
	DefaultMaxPinBytes = 4 << 20
)

// ErrPinOverCap is matched (errors.Is) by ObjectKeysCapped's error when
// not even one page's keys fit the caps.
var ErrPinOverCap = errors.New("actions: one page's keys exceed the pin cap")

// ObjectKeysCapped is ObjectKeysIn (tokens in namespace ns) within maxKeys keys and maxBytes bytes
// of keys (values <= 0 take DefaultMaxPinKeys and DefaultMaxPinBytes):
// past either, tokens are cut to the longest run of leading full pages
// whose keys fit (at most maxKeys pages, so the page hashes are bounded
// too), and cut is the number of full pages dropped. A trailing_pages
// pool then covers the last pages of the cut prefix. The count is made
// from the layout before anything is allocated, so what it allocates is
// bounded by the caps, not by the layout. It fails as ObjectKeys does,
// and with ErrPinOverCap when the first page alone does not fit.
func ObjectKeysCapped(layout *schemas.ObjectLayout, tokens []uint32, ns Namespace, maxKeys, maxBytes int) (keys []string, cut int, err error) {
	if err := checkLayout(layout); err != nil {
		return nil, 0, err
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxPinKeys
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPinBytes
	}
	ps := int(layout.PageSize)
	n := len(tokens) / ps
	if n == 0 {
		return nil, 0, nil
	}
	hl := &layout.HicacheObjectLayout
	type poolSize struct {
		trailing    int // 0: every page
		keys, bytes int // per page
		overPerPage bool
	}
	sizes := make([]poolSize, len(hl.Pools))
	for i, pl := range hl.Pools {
		s := poolSize{keys: len(pl.Suffixes)}
		if pl.HitPolicy == HitTrailingPages {
			s.trailing = pl.TrailingPages
		}
		for _, suf := range pl.Suffixes {
			s.bytes += len(hl.KeyPrefix) + 1 + 2*sha256.Size + len(suf)
			if s.bytes > maxBytes {
				s.overPerPage = true
				break
			}
		}
		sizes[i] = s
	}
	// fits reports whether the keys of the first pages pages are within
	// the caps; it is monotone in pages and never overflows (each product
	// is checked against the cap by division first).
	fits := func(pages int) bool {
		k, b := 0, 0
		for _, s := range sizes {
			covered := pages
			if s.trailing > 0 {
				covered = min(s.trailing, pages)
			}
			if covered == 0 {
				continue
			}
			if s.overPerPage || s.keys > (maxKeys-k)/covered || s.bytes > (maxBytes-b)/covered {
				return false
			}
			k += covered * s.keys
			b += covered * s.bytes
		}
		return true
	}
	limit := min(n, maxKeys)
	keep := sort.Search(limit+1, func(p int) bool { return !fits(p) }) - 1
	if keep < 1 {
		return nil, n, fmt.Errorf("%w: %d keys or %d bytes", ErrPinOverCap, maxKeys, maxBytes)
	}
	keys, err = ObjectKeysIn(layout, tokens[:keep*ps], ns)
	return keys, n - keep, err
}
