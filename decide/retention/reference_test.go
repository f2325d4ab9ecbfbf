package retention

// The planner as it was at 77b8990 (planner.go, rank.go), kept as the
// reference of TestPlanEqualsTheReference: the plan made faster must
// make the same plans. Two changes from 77b8990, both in Plan, make it
// deterministic (it was not: it read the learned shares while a loop in
// map order was still updating them): the pages and sessions that age
// out are counted before any estimate is read, and a page that two
// sessions give the same P takes the smaller session id.

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
)

type refPageStat struct {
	first, last time.Time
	reuses      float64 // decayed count of sightings after the first, at last
	seen        int
	tokens      int
	depth       int
	session     string
	resolved    bool  // its first reuse (or its aging out) was counted
	refCand     int32 // its index among the candidates of the plan being made
}

type refSession struct {
	keys     []string
	last     time.Time
	gap      time.Duration // learned turn gap (EWMA), 0 until a second turn
	toolAt   time.Time     // a tool call's response, zero if the last turn ended otherwise
	toolFor  time.Duration // its class's expected time
	resolved bool          // its next turn (or its aging out) was counted
}

// refPlanner keeps the estimates and makes the plans. Safe for concurrent
// use.
type refPlanner struct {
	cfg       Config
	pageBytes func(tokens int) int64
	mu        sync.Mutex
	pages     map[string]*refPageStat
	sessions  map[string]*refSession
	firstUse  share // first-seen pages reused within H
	nextTurn  share // turns followed by another within H
	toolRet   share // tool calls followed by a turn within headroom × their time
	lastPlan  time.Time
	planNo    uint64
	// term is the leadership term given at Takeover (0: no group), seq
	// the pins numbered since: both make Pin.Revision, under mu, so two
	// plans made at once are numbered in the order they were made.
	term, seq uint64
	slots     map[string]refSlotState
	pinned    []Pinned
	stats     Stats
	latest    time.Time         // the latest event time observed
	group     func() Leadership // nil: no group (takeover.go)
}

type refSlotState struct {
	sum     uint64 // hash of its keys
	expires time.Time
}

// New returns a refPlanner of cfg (after WithDefaults and Validate).
func newRef(cfg Config) (*refPlanner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv := int64(cfg.KVBytesPerToken)
	return &refPlanner{cfg: cfg, pageBytes: func(t int) int64 { return int64(t) * kv },
		pages: map[string]*refPageStat{}, sessions: map[string]*refSession{}, slots: map[string]refSlotState{}}, nil
}

func (p *refPlanner) decay(d time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return math.Exp(-float64(d) / float64(p.cfg.Horizon))
}

// Request records a prompt's pages (keys, each of pageTokens tokens) at
// event time at, for session (may be empty).
func (p *refPlanner) Request(at time.Time, sessionID string, keys []string, pageTokens int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = later(p.latest, at)
	h := p.cfg.Horizon
	for i, k := range keys {
		st, ok := p.pages[k]
		if !ok {
			p.pages[k] = &refPageStat{first: at, last: at, seen: 1, tokens: pageTokens, depth: i, session: sessionID}
			continue
		}
		gap := at.Sub(st.last)
		if !st.resolved {
			st.resolved = true
			p.firstUse.add(at.Sub(st.first) <= h, shareDecay)
		}
		st.reuses = st.reuses*p.decay(gap) + 1
		if at.After(st.last) {
			st.last = at
		}
		st.seen++
		if sessionID != "" {
			st.session = sessionID
		}
	}
	if sessionID == "" {
		return
	}
	s, ok := p.sessions[sessionID]
	if ok {
		gap := at.Sub(s.last)
		if !s.resolved {
			p.nextTurn.add(gap <= h, shareDecay)
			if !s.toolAt.IsZero() {
				p.toolRet.add(at.Sub(s.toolAt) <= headroom*max(s.toolFor, time.Second), shareDecay)
			}
		}
		if s.gap == 0 {
			s.gap = gap
		} else {
			s.gap = (3*s.gap + gap) / 4
		}
	} else {
		s = &refSession{}
		p.sessions[sessionID] = s
	}
	s.keys, s.last, s.toolAt, s.resolved = keys, at, time.Time{}, false
}

// ToolCall records that the session's latest turn ended in a tool call
// at event time at, expected to take expected (its class's learned time).
func (p *refPlanner) ToolCall(at time.Time, sessionID string, expected time.Duration) {
	if sessionID == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = later(p.latest, at)
	if s, ok := p.sessions[sessionID]; ok {
		s.toolAt, s.toolFor = at, expected
	}
}

// probability is page k's P(reuse within H) at now, the expected
// number of reuses within H, and why.
func (p *refPlanner) probability(now time.Time, st *refPageStat) (float64, float64, Reason) {
	h := p.cfg.Horizon
	var best float64
	var why Reason
	if st.seen >= 2 {
		e := st.reuses * p.decay(now.Sub(st.last))
		return 1 - math.Exp(-e), e, ReasonShared
	} else {
		age := now.Sub(st.first)
		pf := p.firstUse.value(0.1)
		if age > h {
			pf *= p.decay(age - h)
		}
		best, why = pf, ReasonFirst
	}
	return best, best, why
}

// sessionProbability is the P its session gives a page of its latest
// prompt at now (0 when the session's estimate has run out).
func (p *refPlanner) sessionProbability(now time.Time, s *refSession) (float64, Reason, time.Time) {
	if !s.toolAt.IsZero() {
		until := s.toolAt.Add(headroom * max(s.toolFor, time.Second))
		if now.Before(until) {
			return p.toolRet.value(0.5), ReasonTool, until
		}
	}
	span := p.cfg.Horizon
	if s.gap > 0 {
		span = min(span, headroom*s.gap)
	}
	until := s.last.Add(span)
	if now.Before(until) {
		return p.nextTurn.value(0.2), ReasonSession, until
	}
	return 0, 0, time.Time{}
}

type refCand struct {
	key    string
	st     *refPageStat
	p      float64
	e      float64 // expected reuses within H: the rank
	why    Reason
	until  time.Time
	sessID string
}

// Plan makes a plan at event time now if Interval has passed since the
// last one, and returns the pin actions to send (nil otherwise).
func (p *refPlanner) Plan(now time.Time) []Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lastPlan.IsZero() && now.Sub(p.lastPlan) < p.cfg.Interval {
		return nil
	}
	p.lastPlan = now
	p.planNo++
	p.stats.Plans++
	h := p.cfg.Horizon
	cands := make([]refCand, 0, len(p.pages))
	for _, st := range p.pages {
		if !st.resolved && now.Sub(st.first) > h {
			st.resolved = true
			p.firstUse.add(false, shareDecay)
		}
	}
	for k, st := range p.pages {
		pr, e, why := p.probability(now, st)
		until := now.Add(h)
		cands = append(cands, refCand{key: k, st: st, p: pr, e: e, why: why, until: until})
	}
	for i := range cands {
		cands[i].st.refCand = int32(i)
	}
	for _, s := range p.sessions {
		if !s.resolved && now.Sub(s.last) > h {
			s.resolved = true
			p.nextTurn.add(false, shareDecay)
			if !s.toolAt.IsZero() {
				p.toolRet.add(false, shareDecay)
			}
		}
	}
	for id, s := range p.sessions {
		sp, why, until := p.sessionProbability(now, s)
		if sp == 0 {
			if now.Sub(s.last) > 4*h {
				delete(p.sessions, id)
			}
			continue
		}
		for _, k := range s.keys {
			if st, ok := p.pages[k]; ok && (sp > cands[st.refCand].e || sp == cands[st.refCand].e && cands[st.refCand].sessID != "" && id < cands[st.refCand].sessID) {
				i := st.refCand
				cands[i].p, cands[i].e, cands[i].why, cands[i].until, cands[i].sessID = sp, sp, why, until, id
			}
		}
	}
	// Forget the least likely beyond MaxTracked, and what is long dead.
	dead := func(c *refCand) bool { return c.p < p.cfg.MinProbability/100 && now.Sub(c.st.last) > 4*h }
	for _, i := range refForgotten(cands, p.cfg.MaxTracked, dead) {
		delete(p.pages, cands[i].key)
	}
	budget := p.cfg.BudgetBytes()
	var used int64
	ttl := 3 * p.cfg.Interval
	groups := map[string][]refCand{}
	p.pinned = p.pinned[:0]
	var expected float64
	best := newRefBestFirst(cands, func(c *refCand) bool { return c.p >= p.cfg.MinProbability })
	for i, ok := best.next(); ok; i, ok = best.next() {
		c := cands[i]
		b := p.pageBytes(c.st.tokens)
		if used+b > budget {
			break
		}
		used += b
		band := bandOf(c.p)
		slot := "retain:" + strconv.Itoa(band) + ":" + strconv.Itoa(int(xxh3.HashString(c.key)%Shards))
		groups[slot] = append(groups[slot], c)
		score := c.e * float64(c.st.tokens) / (float64(b) * h.Seconds())
		sess := c.sessID
		if sess == "" {
			sess = c.st.session
		}
		p.pinned = append(p.pinned, Pinned{Key: c.key, Session: sess, Depth: c.st.depth, Probability: c.p, Score: score,
			Bytes: b, Expires: now.Add(ttl), Reason: c.why.String()})
		expected += c.e * float64(c.st.tokens)
	}
	var out []Pin
	trigger := "retain-plan-" + strconv.FormatUint(p.planNo, 10)
	if p.term > 0 {
		// Another leader numbers its plans alike: the term keeps their
		// message ids apart, or a receiver would drop the new leader's
		// plan N as the old one's duplicate.
		trigger += "@" + strconv.FormatUint(p.term, 10)
	}
	names := make([]string, 0, len(groups))
	for slot := range groups {
		names = append(names, slot)
	}
	slices.Sort(names)
	for _, slot := range names {
		g := groups[slot]
		keys := make([]string, len(g))
		tokens, best := 0, 0.0
		for i, c := range g {
			keys[i] = c.key
			tokens += c.st.tokens
			best = max(best, c.p)
		}
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		var sum uint64
		for _, k := range sorted {
			sum = sum*1099511628211 ^ xxh3.HashString(k)
		}
		prev, had := p.slots[slot]
		if had && prev.sum == sum && prev.expires.Sub(now) > p.cfg.Interval {
			continue // unchanged and not due: the pin holds
		}
		kind := "pin"
		if had {
			p.stats.Renewals++
			kind = "renew"
		} else {
			p.stats.Pins++
		}
		p.slots[slot] = refSlotState{sum: sum, expires: now.Add(ttl)}
		out = append(out, Pin{Trigger: trigger + ":" + slot, Slot: slot, Keys: keys, TTL: ttl,
			Priority: priority(best), Tokens: tokens, Kind: kind})
	}
	for slot := range p.slots {
		if _, ok := groups[slot]; !ok {
			delete(p.slots, slot)
			p.stats.Releases++
			out = append(out, Pin{Trigger: trigger + ":" + slot, Slot: slot, Kind: "release"})
		}
	}
	slices.SortStableFunc(out, func(a, b Pin) int { return cmp.Compare(a.Slot, b.Slot) })
	if p.term > 0 {
		for i := range out {
			p.seq++
			out[i].Revision = p.term<<32 + p.seq
		}
	}
	p.stats.PinnedPages, p.stats.PinnedBytes, p.stats.Budget = len(p.pinned), used, budget
	p.stats.ExpectedSavedPerPlan = expected
	return out
}

// refCompareCands is a plan's order: best first (most expected reuses),
// ties by depth (a prefix before what extends it), then by key, so the
// order is total and a plan does not depend on map iteration.
func refCompareCands(a, b *refCand) int {
	return cmp.Or(cmp.Compare(b.e, a.e), cmp.Compare(a.st.depth, b.st.depth), cmp.Compare(a.key, b.key))
}

// refBestFirst hands out the candidates a plan keeps in refCompareCands order,
// one at a time. A plan takes the best pages until its budget is spent:
// a few thousand of up to DefaultMaxTrackedPages tracked, every Interval.
// Sorting them all was most of a plan's time (and of whatif's planner
// rows); a heap costs O(n) to build and O(log n) per page taken.
type refBestFirst struct {
	c []refCand
	h []int32
}

// newRefBestFirst orders the candidates for which keep is true.
func newRefBestFirst(c []refCand, keep func(*refCand) bool) *refBestFirst {
	b := &refBestFirst{c: c, h: make([]int32, 0, len(c))}
	for i := range c {
		if keep(&c[i]) {
			b.h = append(b.h, int32(i))
		}
	}
	heap.Init(b)
	return b
}

// next returns the index of the best candidate not yet handed out, and
// false when none is left.
func (b *refBestFirst) next() (int, bool) {
	if len(b.h) == 0 {
		return 0, false
	}
	return int(heap.Pop(b).(int32)), true
}

func (b *refBestFirst) Len() int           { return len(b.h) }
func (b *refBestFirst) Less(i, j int) bool { return refCompareCands(&b.c[b.h[i]], &b.c[b.h[j]]) < 0 }
func (b *refBestFirst) Swap(i, j int)      { b.h[i], b.h[j] = b.h[j], b.h[i] }
func (b *refBestFirst) Push(x any)         { b.h = append(b.h, x.(int32)) }
func (b *refBestFirst) Pop() any {
	x := b.h[len(b.h)-1]
	b.h = b.h[:len(b.h)-1]
	return x
}

// refForgotten returns the candidates a plan forgets: with the candidates
// in refCompareCands order, those from the end that are dead, up to the
// last that is not (and all beyond max, when there are more). Within
// max it takes one pass: a dead candidate is refForgotten when it sorts
// after every live one.
func refForgotten(c []refCand, max int, dead func(*refCand) bool) []int {
	var out []int
	if len(c) > max {
		// Beyond MaxTracked: rare (a million pages), sort them.
		idx := make([]int, len(c))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return refCompareCands(&c[a], &c[b]) })
		for k := len(idx) - 1; k >= 0; k-- {
			if k >= max || dead(&c[idx[k]]) {
				out = append(out, idx[k])
				continue
			}
			break
		}
		return out
	}
	live := -1
	for i := range c {
		if !dead(&c[i]) && (live < 0 || refCompareCands(&c[i], &c[live]) > 0) {
			live = i
		}
	}
	for i := range c {
		if dead(&c[i]) && (live < 0 || refCompareCands(&c[i], &c[live]) > 0) {
			out = append(out, i)
		}
	}
	return out
}

// Top returns the n best pages of the last plan (all for n <= 0).
func (p *refPlanner) Top(n int) []Pinned {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= 0 || n > len(p.pinned) {
		n = len(p.pinned)
	}
	return slices.Clone(p.pinned[:n])
}

// Stats returns the counters and learned shares.
func (p *refPlanner) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	if p.group != nil {
		g := p.group()
		s.Group = &g
	}
	s.Tracked, s.Sessions = len(p.pages), len(p.sessions)
	s.FirstReuseShare, s.NextTurnShare, s.ToolReturnShare = p.firstUse.value(0.1), p.nextTurn.value(0.2), p.toolRet.value(0.5)
	return s
}

// takeover is Takeover as it was at 77b8990.
func (p *refPlanner) takeover(releaseOthers bool, term uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.term, p.seq = term, 0
	clear(p.slots)
	p.lastPlan = time.Time{}
	if !releaseOthers {
		return
	}
	for band := range Bands {
		for shard := range Shards {
			p.slots["retain:"+strconv.Itoa(band)+":"+strconv.Itoa(shard)] = refSlotState{}
		}
	}
}
