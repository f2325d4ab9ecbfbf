package retention

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// compareCands is a plan's order: best first (most expected reuses),
// ties by depth (a prefix before what extends it), then by key, so the
// order is total and a plan does not depend on the pages' places. It
// decides on e nearly always: the rest is compared only on a tie.
func compareCands(a, b *pageStat) int {
	if c := cmp.Compare(b.e, a.e); c != 0 {
		return c
	}
	if a.depth != b.depth {
		return cmp.Compare(a.depth, b.depth)
	}
	return strings.Compare(a.key, b.key)
}

// bestPages returns the places of the pages a plan may pin (P at least
// MinProbability), best first in compareCands order, at most limit of
// them. A plan takes the best pages until its budget is spent: a few
// thousand of up to DefaultMaxTrackedPages tracked, every Interval. Beyond
// limit it keeps the best in a heap whose root is the worst kept, so a
// page that does not make it costs one comparison, and only the kept
// are sorted.
func (p *Planner) bestPages(limit int) []int32 {
	pages := p.pages
	var kept []int32
	for i := range pages {
		if pages[i].p >= p.cfg.MinProbability {
			kept = append(kept, int32(i))
		}
	}
	order := func(a, b int32) int { return compareCands(&pages[a], &pages[b]) }
	if len(kept) > limit && limit > 0 {
		h := kept[:limit]
		for i := limit/2 - 1; i >= 0; i-- {
			worstDown(h, i, order)
		}
		for _, i := range kept[limit:] {
			if order(i, h[0]) < 0 {
				h[0] = i
				worstDown(h, 0, order)
			}
		}
		kept = h
	}
	slices.SortFunc(kept, order)
	return kept
}

// worstDown restores the heap h (the worst in order at its root) below i.
func worstDown(h []int32, i int, order func(a, b int32) int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && order(h[l], h[w]) > 0 {
			w = l
		}
		if r < len(h) && order(h[r], h[w]) > 0 {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// forgotten returns the places of the pages a plan forgets: with the
// pages in compareCands order, those from the end that are dead (P below
// a hundredth of MinProbability and unseen for four horizons), up to the
// last that is not (and all beyond MaxTracked, when there are more).
// Within MaxTracked it takes one pass: a dead page is forgotten when it
// sorts after every live one.
func (p *Planner) forgotten(now time.Time) []int32 {
	pages, max := p.pages, p.cfg.MaxTracked
	dead := func(st *pageStat) bool {
		return st.p < p.cfg.MinProbability/100 && now.Sub(st.last) > 4*p.cfg.Horizon
	}
	var out []int32
	if len(pages) > max {
		// Beyond MaxTracked: rare (a million pages), sort them.
		idx := make([]int32, len(pages))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int { return compareCands(&pages[a], &pages[b]) })
		for k := len(idx) - 1; k >= 0; k-- {
			if k >= max || dead(&pages[idx[k]]) {
				out = append(out, idx[k])
				continue
			}
			break
		}
		return out
	}
	live := -1
	for i := range pages {
		if dead(&pages[i]) {
			out = append(out, int32(i))
		} else if live < 0 || compareCands(&pages[i], &pages[live]) > 0 {
			live = i
		}
	}
	if live >= 0 {
		out = slices.DeleteFunc(out, func(i int32) bool { return compareCands(&pages[i], &pages[live]) < 0 })
	}
	return out
}
