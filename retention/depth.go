package retention

import "math/bits"

// A page seen once has no history of its own: its chance of reuse is the
// learned share of first-seen pages that were reused within the horizon.
// Pages near the start of a prompt (system prompts, shared documents, a
// conversation's opening) are reused across requests far more often than
// pages deep in it, which only the same context's continuation reuses;
// one share for all gives every page the average, pinning deep pages
// that are rarely reused and missing shallow ones that are. So the share
// is learned per depth, in buckets that double (depth 0, 1, 2–3, 4–7, …):
// each bucket learns on its own from the pages it resolves, and starts
// from the overall share as a one-observation prior until it has some.

// depthBuckets bounds the buckets: depth 2^(depthBuckets−2) and deeper
// share the last (2^14 pages is past any context window).
const depthBuckets = 16

func depthBucket(depth int) int {
	return min(bits.Len(uint(max(depth, 0))), depthBuckets-1)
}

// firstSeen counts whether first-seen page st was reused within the
// horizon, overall and at its depth.
func (p *Planner) firstSeen(st *pageStat, reused bool) {
	p.firstUse.add(reused, shareDecay)
	p.firstAt[depthBucket(st.depth)].add(reused, shareDecay)
}

// firstReuse is a first-seen page's chance of reuse within the horizon:
// its depth's share, with the overall one as prior.
func (p *Planner) firstReuse(st *pageStat) float64 {
	return p.firstAt[depthBucket(st.depth)].value(p.firstUse.value(0.1))
}
