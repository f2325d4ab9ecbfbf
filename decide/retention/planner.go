// Package retention decides what the shared KV store (Mooncake) keeps:
// for every page hintstream has seen in a prompt it estimates the chance
// that some request reuses it within a horizon, and it soft-pins the
// pages that save the most expected prefill per byte-second, within a
// global byte budget. Everything else stays under the store's own
// eviction (LRU in Mooncake).
//
// The estimates come only from what hintstream sees on the bus:
//
//   - prefixes seen across sessions: a decayed count of the page's
//     reuses gives a reuse rate λ, and P(reuse within H) = 1 − e^(−λH);
//     a page seen once takes the learned share of first-seen pages that
//     were reused within H (counted as pages are seen again, or age out);
//   - session contexts: a session's latest prompt is reused by its next
//     turn with the learned share of turns followed by another within H,
//     for as long as the session's learned turn gap (times headroom);
//   - tool calls: a response ending in a tool call makes its session's
//     next turn likely (the learned share of tool calls followed by a
//     turn) for the tool class's learned time (package tooltime) times
//     headroom.
//
// The score of a page is P × tokens ÷ (bytes × H): the expected prefill
// saved per byte-second held. Every page has the same size, so the rank
// is P's; the score is what Mooncake's priority is set from. A plan,
// made every Interval of event time, pins the best pages up to the
// budget under a few slots (bands of P × hash shards), renews the slots
// whose pages stay, shortens nothing it still wants, and releases slots
// that fall out of the budget. A pin lasts three Intervals: a planner
// that stops (or a member that dies) lets its pins lapse soon.
package retention

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/zeebo/xxh3"
)

// Defaults of Config.
const (
	DefaultHorizon         = 10 * time.Minute
	DefaultInterval        = 5 * time.Second
	DefaultMinProbability  = 0.05
	DefaultMaxTrackedPages = 1 << 20
	// DefaultBudgetShare is the share of the store's capacity pinned when
	// only the capacity is given.
	DefaultBudgetShare = 0.5
	// Bands and Shards name the pin slots: "retain:<band>:<shard>".
	Bands  = 4
	Shards = 16
	// headroom multiplies a learned gap or tool time into how long a
	// session's pages keep their session estimate.
	headroom = 3
	// shareDecay weighs the learned shares toward their last thousand or
	// so observations, so they follow a change of traffic.
	shareDecay = 0.999
)

// ErrInvalidOption marks an unusable Config.
var ErrInvalidOption = errors.New("retention: invalid option")

// Config sizes a Planner.
type Config struct {
	// Budget is the bytes the planner may pin at once. Zero: BudgetShare
	// of Capacity.
	Budget int64
	// Capacity is the store's size in bytes (--l3-capacity); BudgetShare
	// (0..1] of it is the budget when Budget is 0 (default
	// DefaultBudgetShare).
	Capacity    int64
	BudgetShare float64
	// KVBytesPerToken sizes a page: page tokens × this (default
	// schemas.DefaultKVBytesPerToken).
	KVBytesPerToken int
	// Horizon H of the reuse estimate (default DefaultHorizon).
	Horizon time.Duration
	// Interval between plans, on the events' clock (default
	// DefaultInterval).
	Interval time.Duration
	// MinProbability is the least P worth a pin (default
	// DefaultMinProbability).
	MinProbability float64
	// MaxTracked bounds the pages tracked; the least likely go first
	// (default DefaultMaxTrackedPages).
	MaxTracked int
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.BudgetShare == 0 {
		c.BudgetShare = DefaultBudgetShare
	}
	if c.KVBytesPerToken == 0 {
		c.KVBytesPerToken = schemas.DefaultKVBytesPerToken
	}
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MinProbability == 0 {
		c.MinProbability = DefaultMinProbability
	}
	if c.MaxTracked == 0 {
		c.MaxTracked = DefaultMaxTrackedPages
	}
	return c
}

// Validate checks a Config after WithDefaults.
func (c Config) Validate() error {
	switch {
	case c.Budget < 0:
		return fmt.Errorf("%w: budget %d bytes", ErrInvalidOption, c.Budget)
	case c.Budget == 0 && c.Capacity <= 0:
		return fmt.Errorf("%w: neither a budget nor a store capacity", ErrInvalidOption)
	case c.Capacity < 0:
		return fmt.Errorf("%w: capacity %d bytes", ErrInvalidOption, c.Capacity)
	case c.Budget > MaxBytes || c.Capacity > MaxBytes:
		return fmt.Errorf("%w: budget %d, capacity %d bytes (at most %d)", ErrInvalidOption, c.Budget, c.Capacity, int64(MaxBytes))
	case c.KVBytesPerToken > MaxKVBytesPerToken:
		return fmt.Errorf("%w: %d KV bytes per token (at most %d)", ErrInvalidOption, c.KVBytesPerToken, MaxKVBytesPerToken)
	case !(c.BudgetShare > 0 && c.BudgetShare <= 1):
		return fmt.Errorf("%w: budget share %v (want (0, 1])", ErrInvalidOption, c.BudgetShare)
	case c.KVBytesPerToken < 0:
		return fmt.Errorf("%w: %d KV bytes per token", ErrInvalidOption, c.KVBytesPerToken)
	case c.Horizon < 0 || c.Interval < 0:
		return fmt.Errorf("%w: horizon %v, interval %v", ErrInvalidOption, c.Horizon, c.Interval)
	case !(c.MinProbability > 0 && c.MinProbability <= 1):
		return fmt.Errorf("%w: min probability %v (want (0, 1])", ErrInvalidOption, c.MinProbability)
	case c.MaxTracked < 0:
		return fmt.Errorf("%w: max tracked %d", ErrInvalidOption, c.MaxTracked)
	}
	return nil
}

// BudgetBytes is the budget in effect.
func (c Config) BudgetBytes() int64 {
	if c.Budget > 0 {
		return c.Budget
	}
	return int64(float64(c.Capacity) * c.BudgetShare)
}

// Reason says which estimate gave a page its P.
type Reason uint8

// Reasons, as inspect prints them.
const (
	ReasonShared  Reason = iota + 1 // reused across requests (decayed count)
	ReasonFirst                     // seen once: the learned first-reuse share
	ReasonSession                   // its session's next turn
	ReasonTool                      // its session's tool call returns
)

func (r Reason) String() string {
	switch r {
	case ReasonShared:
		return "shared"
	case ReasonFirst:
		return "seen_once"
	case ReasonSession:
		return "session"
	case ReasonTool:
		return "tool_call"
	}
	return "unknown"
}

// Pin is one pin action the planner wants sent: Keys under Slot for TTL
// at Priority (1..100), or a release (TTL 0). Trigger is unique per plan.
type Pin struct {
	Trigger, Slot string
	Keys          []string
	TTL           time.Duration
	Priority      int
	Tokens        int
	// Kind is "pin" (a new slot), "renew" (a slot pinned again) or
	// "release".
	Kind string
	// Revision orders the pins of a group's leaders (kv.pin's revision):
	// the leader's term (the lock revision it took the lock at) in the
	// high 32 bits, the pin's number since its takeover in the low. 0
	// when the planner leads no group (a lone planner does not order).
	Revision uint64
}

// Pinned is a page the last plan pinned, for inspection.
type Pinned struct {
	Key         string    `json:"key"`
	Session     string    `json:"session,omitempty"`
	Depth       int       `json:"depth"` // pages before it in its prompt
	Probability float64   `json:"probability"`
	Score       float64   `json:"score"` // expected tokens saved per byte-second
	Bytes       int64     `json:"bytes"`
	Expires     time.Time `json:"expires"`
	Reason      string    `json:"reason"`
}

// Stats are the planner's counters.
type Stats struct {
	Tracked, Sessions    int
	Plans                uint64
	PinnedPages          int
	PinnedBytes, Budget  int64
	Pins, Renewals       uint64
	Releases             uint64
	FirstReuseShare      float64
	NextTurnShare        float64
	ToolReturnShare      float64
	ExpectedSavedPerPlan float64 // Σ P × tokens of the pinned pages
	// Group is who plans for the consumer group; nil without one.
	Group *Leadership `json:",omitempty"`
}

// pageStat is a tracked page: what Request learned of it, and what the
// plan being made estimates. The pages sit in one slice (Planner.pages)
// with a map from key to place: a plan walks every page, and a slice is
// walked several times faster than a map.
type pageStat struct {
	key         string
	hash        uint64 // xxh3 of key: its shard, and its slot's sum
	first, last time.Time
	reuses      float64 // decayed count of sightings after the first, at last
	seen        int
	tokens      int
	depth       int
	session     string
	resolved    bool // its first reuse (or its aging out) was counted
	// The plan being made: P, the expected reuses (the rank), why, and
	// the session whose estimate it took ("" for its own).
	why    Reason
	p, e   float64
	sessID string
}

type session struct {
	keys     []string
	last     time.Time
	gap      time.Duration // learned turn gap (EWMA), 0 until a second turn
	toolAt   time.Time     // a tool call's response, zero if the last turn ended otherwise
	toolFor  time.Duration // its class's expected time
	resolved bool          // its next turn (or its aging out) was counted
}

// share is a decayed success ratio.
type share struct{ hit, all float64 }

func (s *share) add(hit bool, decay float64) {
	s.hit, s.all = s.hit*decay, s.all*decay
	s.all++
	if hit {
		s.hit++
	}
}

// value with a weak prior (prior, one pseudo-observation).
func (s share) value(prior float64) float64 { return (s.hit + prior) / (s.all + 1) }

// Planner keeps the estimates and makes the plans. Safe for concurrent
// use.
type Planner struct {
	cfg       Config
	pageBytes func(tokens int) int64
	mu        sync.Mutex
	pages     []pageStat
	index     map[string]int32 // key → place in pages
	sessions  map[string]*session
	firstUse  share // first-seen pages reused within H
	nextTurn  share // turns followed by another within H
	toolRet   share // tool calls followed by a turn within headroom × their time
	lastPlan  time.Time
	planNo    uint64
	// term is the leadership term given at Takeover (0: no group), seq
	// the pins numbered since: both make Pin.Revision, under mu, so two
	// plans made at once are numbered in the order they were made.
	term, seq uint64
	slots     [Bands * Shards]slotState // by slot number (slotNames)
	pinned    []Pinned
	stats     Stats
	latest    time.Time         // the latest event time observed
	group     func() Leadership // nil: no group (takeover.go)
}

type slotState struct {
	held    bool   // pinned by this planner (or to release, after a takeover)
	sum     uint64 // hash of its keys
	expires time.Time
}

// New returns a Planner of cfg (after WithDefaults and Validate).
func New(cfg Config) (*Planner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv := int64(cfg.KVBytesPerToken)
	return &Planner{cfg: cfg, pageBytes: func(t int) int64 { return int64(t) * kv },
		index: map[string]int32{}, sessions: map[string]*session{}}, nil
}

// Config is the configuration in effect.
func (p *Planner) Config() Config { return p.cfg }

func (p *Planner) decay(d time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return math.Exp(-float64(d) / float64(p.cfg.Horizon))
}

// Request records a prompt's pages (keys, each of pageTokens tokens) at
// event time at, for session (may be empty).
func (p *Planner) Request(at time.Time, sessionID string, keys []string, pageTokens int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = later(p.latest, at)
	h := p.cfg.Horizon
	for i, k := range keys {
		j, ok := p.index[k]
		if !ok {
			p.index[k] = int32(len(p.pages))
			p.pages = append(p.pages, pageStat{key: k, hash: xxh3.HashString(k), first: at, last: at, seen: 1,
				tokens: pageTokens, depth: i, session: sessionID})
			continue
		}
		st := &p.pages[j]
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
		s = &session{}
		p.sessions[sessionID] = s
	}
	s.keys, s.last, s.toolAt, s.resolved = keys, at, time.Time{}, false
}

// ToolCall records that the session's latest turn ended in a tool call
// at event time at, expected to take expected (its class's learned time).
func (p *Planner) ToolCall(at time.Time, sessionID string, expected time.Duration) {
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

// probability is st's P(reuse within H) at now, the expected number of
// reuses within H (the rank), and why; firstUse is the learned share of
// first-seen pages reused within H, as the plan reads it.
func (p *Planner) probability(now time.Time, st *pageStat, firstUse float64) (float64, float64, Reason) {
	if st.seen >= 2 {
		e := st.reuses * p.decay(now.Sub(st.last))
		return 1 - math.Exp(-e), e, ReasonShared
	}
	pf := firstUse
	if age := now.Sub(st.first); age > p.cfg.Horizon {
		pf *= p.decay(age - p.cfg.Horizon)
	}
	return pf, pf, ReasonFirst
}

// sessionProbability is the P its session gives a page of its latest
// prompt at now (0 when the session's estimate has run out).
func (p *Planner) sessionProbability(now time.Time, s *session) (float64, Reason, time.Time) {
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

// Plan makes a plan at event time now if Interval has passed since the
// last one, and returns the pin actions to send (nil otherwise).
//
// A plan walks every tracked page (up to MaxTracked) every Interval, so
// it is written for that walk: the pages are a slice, the learned shares
// are read once, after every page and session that aged out is counted
// (so a plan does not depend on the order of the walk), and only as many
// of the best pages as the budget can hold are ranked (bestPages).
func (p *Planner) Plan(now time.Time) []Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lastPlan.IsZero() && now.Sub(p.lastPlan) < p.cfg.Interval {
		return nil
	}
	p.lastPlan = now
	p.planNo++
	p.stats.Plans++
	h := p.cfg.Horizon
	for i := range p.pages {
		if st := &p.pages[i]; !st.resolved && now.Sub(st.first) > h {
			st.resolved = true
			p.firstUse.add(false, shareDecay)
		}
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
	firstUse := p.firstUse.value(0.1)
	minTokens := math.MaxInt
	for i := range p.pages {
		st := &p.pages[i]
		st.p, st.e, st.why = p.probability(now, st, firstUse)
		st.sessID = ""
		minTokens = min(minTokens, st.tokens)
	}
	for id, s := range p.sessions {
		sp, why, _ := p.sessionProbability(now, s)
		if sp == 0 {
			if now.Sub(s.last) > 4*h {
				delete(p.sessions, id)
			}
			continue
		}
		for _, k := range s.keys {
			i, ok := p.index[k]
			if !ok {
				continue
			}
			// Of two sessions that give a page the same P, the smaller id:
			// the plan does not depend on the map's order.
			if st := &p.pages[i]; sp > st.e || sp == st.e && st.sessID != "" && id < st.sessID {
				st.p, st.e, st.why, st.sessID = sp, sp, why, id
			}
		}
	}
	budget := p.cfg.BudgetBytes()
	// The plan takes the best pages until one does not fit: at most the
	// budget over the smallest page, and the one that does not fit.
	limit := len(p.pages)
	if b := p.pageBytes(minTokens); b > 0 && budget/b < int64(limit) {
		limit = int(budget/b) + 1
	}
	best := p.bestPages(limit)
	forget := p.forgotten(now)
	var used int64
	ttl := 3 * p.cfg.Interval
	var groups [Bands * Shards][]int32
	p.pinned = p.pinned[:0]
	var expected float64
	for _, i := range best {
		st := &p.pages[i]
		b := p.pageBytes(st.tokens)
		if used+b > budget {
			break
		}
		used += b
		slot := bandOf(st.p)*Shards + int(st.hash%Shards)
		groups[slot] = append(groups[slot], i)
		score := st.e * float64(st.tokens) / (float64(b) * h.Seconds())
		sess := st.sessID
		if sess == "" {
			sess = st.session
		}
		p.pinned = append(p.pinned, Pinned{Key: st.key, Session: sess, Depth: st.depth, Probability: st.p, Score: score,
			Bytes: b, Expires: now.Add(ttl), Reason: st.why.String()})
		expected += st.e * float64(st.tokens)
	}
	var out []Pin
	trigger := "retain-plan-" + strconv.FormatUint(p.planNo, 10)
	if p.term > 0 {
		// Another leader numbers its plans alike: the term keeps their
		// message ids apart, or a receiver would drop the new leader's
		// plan N as the old one's duplicate.
		trigger += "@" + strconv.FormatUint(p.term, 10)
	}
	var hashes []uint64
	for _, slot := range slotOrder {
		g, prev, name := groups[slot], p.slots[slot], slotNames[slot]
		if len(g) == 0 {
			if prev.held {
				p.slots[slot] = slotState{}
				p.stats.Releases++
				out = append(out, Pin{Trigger: trigger + ":" + name, Slot: name, Kind: "release"})
			}
			continue
		}
		keys := make([]string, len(g))
		hashes = hashes[:0]
		tokens, top := 0, 0.0
		for j, i := range g {
			st := &p.pages[i]
			keys[j] = st.key
			hashes = append(hashes, st.hash)
			tokens += st.tokens
			top = max(top, st.p)
		}
		// The slot's sum is of its set of keys, in no order.
		slices.Sort(hashes)
		var sum uint64
		for _, x := range hashes {
			sum = sum*1099511628211 ^ x
		}
		if prev.held && prev.sum == sum && prev.expires.Sub(now) > p.cfg.Interval {
			continue // unchanged and not due: the pin holds
		}
		kind := "pin"
		if prev.held {
			p.stats.Renewals++
			kind = "renew"
		} else {
			p.stats.Pins++
		}
		p.slots[slot] = slotState{held: true, sum: sum, expires: now.Add(ttl)}
		out = append(out, Pin{Trigger: trigger + ":" + name, Slot: name, Keys: keys, TTL: ttl,
			Priority: priority(top), Tokens: tokens, Kind: kind})
	}
	if p.term > 0 {
		for i := range out {
			p.seq++
			out[i].Revision = p.term<<32 + p.seq
		}
	}
	// Forget the least likely beyond MaxTracked, and what is long dead:
	// from the last place, as a removal moves the last page into its own.
	slices.Sort(forget)
	for _, i := range slices.Backward(forget) {
		p.remove(i)
	}
	p.stats.PinnedPages, p.stats.PinnedBytes, p.stats.Budget = len(p.pinned), used, budget
	p.stats.ExpectedSavedPerPlan = expected
	return out
}

// remove forgets the page at place i: the last page takes its place.
func (p *Planner) remove(i int32) {
	delete(p.index, p.pages[i].key)
	last := int32(len(p.pages) - 1)
	if i != last {
		p.pages[i] = p.pages[last]
		p.index[p.pages[i].key] = i
	}
	p.pages[last] = pageStat{}
	p.pages = p.pages[:last]
	if c := cap(p.pages); c > 4096 && len(p.pages) < c/4 {
		p.pages = slices.Clone(p.pages) // give back what a burst took
	}
}

// slotNames are the pin slots by number (band × Shards + shard), and
// slotOrder their numbers in the order of their names: the order a
// plan's pins are sent in.
var slotNames, slotOrder = func() (names [Bands * Shards]string, order [Bands * Shards]int) {
	for band := range Bands {
		for shard := range Shards {
			names[band*Shards+shard] = "retain:" + strconv.Itoa(band) + ":" + strconv.Itoa(shard)
		}
	}
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order[:], func(a, b int) int { return cmp.Compare(names[a], names[b]) })
	return names, order
}()

// bandOf maps P to a slot band: 0 for the likeliest.
func bandOf(pr float64) int {
	switch {
	case pr >= 0.5:
		return 0
	case pr >= 0.2:
		return 1
	case pr >= 0.1:
		return 2
	}
	return 3
}

// priority is Mooncake's 1..100 from P.
func priority(pr float64) int { return min(max(1+int(99*pr), 1), 100) }

// Top returns the n best pages of the last plan (all for n <= 0).
func (p *Planner) Top(n int) []Pinned {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= 0 || n > len(p.pinned) {
		n = len(p.pinned)
	}
	return slices.Clone(p.pinned[:n])
}

// Stats returns the counters and learned shares.
func (p *Planner) Stats() Stats {
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
