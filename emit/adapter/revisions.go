package adapter

import "sync"

// defaultRevisionClaims bounds the claims whose last revision is kept.
const defaultRevisionClaims = 65536

// revisions hands out vLLM claim revisions that grow per claim: the Unix
// time in ms, or one past the claim's last revision when two hints of a
// session fall in one millisecond (vLLM rejects a conflicting payload at
// the same revision and lets an older one not renew). Time-based, they
// also grow across adapter restarts; the map only breaks ties, so it is
// simply cleared when full.
type revisions struct {
	mu   sync.Mutex
	last map[string]int64
	max  int
}

func newRevisions(n int) *revisions { return &revisions{last: make(map[string]int64), max: n} }

func (r *revisions) next(claim string, nowMs int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	rev := max(nowMs, r.last[claim]+1)
	if len(r.last) >= r.max {
		clear(r.last)
	}
	r.last[claim] = rev
	return rev
}
