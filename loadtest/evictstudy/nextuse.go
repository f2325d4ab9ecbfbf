package evictstudy

import "time"

// NextUse evicts, among the leaves of the store's prefix tree
// (leafStore), the page whose next use it expects last: a page used
// twice or more is expected its mean gap between uses after its last
// use, a page used once the median gap to a second use seen so far (a
// minute until one is seen); a page past its expected use is expected
// again as long after now as it has been idle. It is the retention
// planner's reuse-rate estimate (a page's rate from its own uses) made
// the store's whole eviction order: what a Mooncake that took a per-page
// priority from hintstream could do.
type NextUse struct {
	s     *leafStore
	uses  []int32
	first []time.Duration // first use, for the mean gap
	gap1  *gapQuantile    // gaps from first to second use
	keys  []Key
}

// NewNextUse returns an empty NextUse store of capacity pages.
func NewNextUse(a *Accesses, capacity int) Policy {
	return &NextUse{s: newLeafStore(a, capacity, lhdSamples), uses: make([]int32, a.Keys),
		first: make([]time.Duration, a.Keys), gap1: newGapQuantile(0.5, time.Minute)}
}

func (p *NextUse) Contains(k Key) bool { return p.s.Contains(k) }
func (p *NextUse) Len() int            { return p.s.Len() }

func (p *NextUse) Write(now time.Duration, keys []Key) {
	for _, k := range keys {
		switch p.uses[k] {
		case 0:
			p.first[k] = now
		case 1:
			p.gap1.add(now - p.first[k])
		}
		p.uses[k]++
		p.s.last[k] = now
	}
	g1 := p.gap1.get()
	p.s.write(now, keys, func(k Key) float64 {
		last := p.s.last[k]
		gap := g1
		if n := p.uses[k]; n >= 2 {
			gap = (last - p.first[k]) / time.Duration(n-1)
		}
		at := last + gap
		if at <= now {
			at = now + (now - last)
		}
		return -float64(at) // later expected use: lower value
	}, nil)
}
