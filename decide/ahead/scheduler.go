package ahead

import (
	"container/heap"
	"container/list"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/hintstream/hintstream/observe/metrics"
)

// Kinds of prediction (the label of hintstream_ahead_predictions_total).
const (
	KindTurn    = "turn"    // a session's next turn, from its turn gaps
	KindTool    = "tool"    // a session's next turn after a tool call
	KindContext = "context" // a context's next reuse, from its reuse gaps
)

// Turn is a request as the scheduler follows it: the keys it is followed
// under (a session, a context), the prompt it would prefetch and what the
// router needs to choose a worker for it.
type Turn struct {
	RequestID string
	// Session is the session id (empty: none). Context, when not empty,
	// names the prompt's context (a hash of its tokens), followed across
	// sessions.
	Session, Context           string
	Model, LoraName, CacheSalt string
	Tokens                     []uint32
	// Held, when set, gives how many leading tokens of a prefetch's
	// prompt are on worker's device as the turn comes: what the prefetch
	// loaded past them was evicted before use.
	Held func(worker uint64, tokens []uint32) int
}

// Prefetch is a header-free prefetch due now: send it to the worker the
// router would pick for Tokens, then call Queued (or Skipped).
type Prefetch struct {
	ID                         string // request_id of the hint: "ahead-<kind>-<key>-<plan>", unique per plan
	Key                        string // the session or context it predicts
	Session                    string // the session id to record affinity for (empty for a context)
	Kind                       string
	Model, LoraName, CacheSalt string
	Tokens                     []uint32 // the scheduler's copy; not modified after
	// Bytes are the prompt's KV bytes; once admitted, those it loads.
	Bytes    int64
	from     int  // tokens on the worker's device already (Admit)
	admitted bool // its Bytes are reserved
	// Arrival is the predicted arrival; Expires when the prefetch stops
	// being worth holding.
	Arrival, Expires time.Time
}

// Stats are the scheduler's totals (for inspect and the value harness).
type Stats struct {
	Followed                   int
	Predicted, Queued, Used    uint64
	Unlikely, OverBudget, Late uint64
	// Trial: plans not sent because the trial's would-be prefetches
	// had not shown they keep within the budget (trial.go).
	Trial                  uint64
	UsedBytes, WastedBytes int64
	// Outstanding are the bytes queued whose outcome is not known yet.
	Outstanding int64
	// MaxWaste and AllowanceBytes are the budget: WastedBytes stays at
	// most MaxWaste × UsedBytes + AllowanceBytes.
	MaxWaste       float64
	AllowanceBytes int64
	// WasteRatio is WastedBytes / UsedBytes (Inf with waste and no use;
	// not in JSON, which has no Inf).
	WasteRatio float64 `json:"-"`
}

// Scheduler predicts next turns and decides which header-free prefetches
// are due. Safe for concurrent use.
type Scheduler struct {
	cfg Config
	m   *metrics.Ahead

	mu      sync.Mutex
	now     time.Time
	entries map[string]*entry
	lru     *list.List // *entry, most recent first
	due     dueHeap
	byReq   map[string][]*sent // request id → prefetches whose outcome waits on its response
	// early are responses seen before their request (the two streams are
	// consumed apart): request id → where it ran, and when.
	early    map[string]earlyResponse
	pop      [3]gapStats // population gaps by kind (turn, tool, context)
	cont     [4]share    // P(next within horizon) by class
	st       Stats
	lastTick time.Time
	held     int64 // prompt tokens kept, over the entries
	trial    trial // would-be prefetches' outcomes (trial.go)
	// evNow is the latest event time (requests, responses, wake-ups),
	// not moved by ticks: would-be prefetches run out on it (trial.go).
	evNow time.Time
	// announced: the share of sessions' later turns a wake-up announced.
	announced share
}

// Classes of the continuation shares.
const (
	classFirst   = iota // a session's first turn
	classLater          // a session's later turn
	classTool           // a session's turn ended by a tool call
	classContext        // a context seen before
)

type entry struct {
	key, session      string
	context           bool
	el                *list.Element
	model, lora, salt string
	tokens            []uint32
	seen              int       // requests seen under the key
	anchor            time.Time // the latest request or response
	gaps              gapStats
	// open: the latest turn's continuation is not known yet.
	open      bool
	openClass int
	openAt    time.Time
	// announced: the session's turns come with wake-ups, which prefetch
	// them already; it is followed for its gaps but not prefetched.
	announced bool
	// shadow is the trial's would-be prefetch (trial.go).
	shadow, shadowSent *shadow
	// woke: a wake-up came since the session's latest turn.
	woke bool
	// lastReq is the latest turn's request id; answered: its response
	// was seen.
	lastReq  string
	answered bool
	// The next turn's prediction (logged gap estimate at anchor).
	toolTime time.Duration
	kind     string
	plan     *Prefetch // scheduled, not yet due
	gen      uint64
	sent     *sent
}

type sent struct {
	id      string
	worker  uint64
	bytes   int64
	expires time.Time
	// at: when a request came under the key before expiry; its response
	// tells the worker it landed on. held is the share of tokens still on
	// the worker's device then.
	at     time.Time
	tokens []uint32
	from   int // tokens on the device before the prefetch
	held   float64
	// loaded is when its load (at the configured bandwidth) is done: a
	// turn before then found only part of it on the device.
	loaded time.Time
}

// New makes a Scheduler; m counts its work (nil: private counters).
func New(cfg Config, m *metrics.Ahead) (*Scheduler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil {
		m = &metrics.New().Ahead
	}
	return &Scheduler{cfg: cfg, m: m, entries: map[string]*entry{}, lru: list.New(), byReq: map[string][]*sent{}, early: map[string]earlyResponse{}}, nil
}

// Config is the scheduler's configuration after defaults.
func (s *Scheduler) Config() Config { return s.cfg }

// Request tells the scheduler of a turn at its event time. It copies
// what it keeps.
func (s *Scheduler) Request(at time.Time, t Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(at)
	s.event(at)
	var tokens []uint32
	for _, k := range []struct {
		key     string
		session string
		context bool
	}{{"s:" + t.Session, t.Session, false}, {"c:" + t.Context, "", true}} {
		if k.key == "s:" || k.key == "c:" || (k.context && !s.cfg.Contexts) {
			continue
		}
		if tokens == nil {
			tokens = append([]uint32(nil), t.Tokens...)
		}
		e := s.entry(k.key, k.session, k.context)
		s.turn(at, e, t, tokens)
	}
	for s.held > s.cfg.MaxTokens && s.lru.Len() > 1 {
		s.forget(s.lru.Back().Value.(*entry))
	}
}

// Response tells the scheduler a request's response at its event time:
// the worker it ran on resolves a prefetch the request used or wasted;
// a tool call (toolTime: the tool class's learned time, 0 if unknown)
// predicts the session's next turn from the tool's time.
func (s *Scheduler) Response(at time.Time, requestID, session string, worker uint64, toolCall bool, toolTime time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(at)
	s.event(at)
	if ps, ok := s.byReq[requestID]; ok {
		s.resolve(ps, worker)
		delete(s.byReq, requestID)
	} else if requestID != "" && len(s.early) < s.cfg.MaxSessions {
		s.early[requestID] = earlyResponse{worker: worker, at: at, toolCall: toolCall, toolTime: toolTime}
	}
	if session == "" {
		return
	}
	e, ok := s.entries["s:"+session]
	if !ok || e.seen == 0 || e.lastReq != requestID {
		// Its turn has not come yet (two streams): the turn takes it up.
		return
	}
	if at.After(e.anchor) {
		e.anchor = at
	}
	e.answered = true
	if toolCall {
		e.kind, e.toolTime, e.openClass = KindTool, toolTime, classTool
	}
	s.schedule(e)
}

// Wakeup tells the scheduler that a wake-up announced a turn of session:
// the wake-up's own prefetch covers it, so the session gets no
// header-free prefetch from now on (a guess would only compete with it).
func (s *Scheduler) Wakeup(at time.Time, session string) {
	if session == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(at)
	s.event(at)
	e := s.entry("s:"+session, session, false)
	e.woke = true
	if !e.announced {
		e.announced = true
		s.m.Skipped.Inc("announced")
	}
	s.held -= int64(len(e.tokens))
	e.tokens, e.plan = nil, nil
}

// Due returns the prefetches due at at (the caller's event time); it also
// ages out what expired. For each, the caller picks the worker, asks
// Admit, and if admitted calls Queued or Skipped.
func (s *Scheduler) Due(at time.Time) []Prefetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(at)
	var out []Prefetch
	// Due by at, not by the latest time seen: a wall-clock tick behind
	// the events' clock (a replay stamped ahead) sends nothing early.
	for len(s.due) > 0 && !s.due[0].at.After(at) {
		d := heap.Pop(&s.due).(dueItem)
		e, ok := s.entries[d.key]
		if !ok || e.gen != d.gen || e.plan == nil {
			continue
		}
		p := *e.plan
		e.plan = nil
		if !at.Before(p.Expires) {
			// Its window ran out before anyone asked (a member far
			// behind its events): as late as a turn that came first.
			s.st.Late++
			s.m.Skipped.Inc("late")
			continue
		}
		if !e.context && !e.answered {
			continue // its turn's response not seen yet: the trial's
		}
		if !s.trial.open(s.cfg.MaxWaste, float64(p.Bytes)) {
			s.st.Trial++
			s.m.Skipped.Inc("trial")
			continue
		}
		out = append(out, p)
	}
	return out
}

// Admit is the waste budget's say on p, whose worker's device holds its
// first onDevice tokens already: the prefetch would load the rest, and
// only those bytes count as used or wasted. Admitted, they are reserved
// as in flight (so the next one is judged with them) and p.Bytes is set
// to them; the caller then calls Queued or Skipped.
func (s *Scheduler) Admit(p *Prefetch, onDevice int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	onDevice = min(max(onDevice, 0), len(p.Tokens))
	loads := s.cfg.Bytes(len(p.Tokens) - onDevice)
	if !s.allowed(loads) {
		s.st.OverBudget++
		s.m.Skipped.Inc("over_budget")
		return false
	}
	p.Bytes, p.from, p.admitted = loads, onDevice, true
	s.st.Outstanding += loads
	return true
}

// Queued records that p, admitted, was handed to the sender for worker.
func (s *Scheduler) Queued(p Prefetch, worker uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Queued++
	s.m.Queued.Inc()
	e, ok := s.entries[p.Key]
	if !ok {
		// Forgotten since it was due: no turn can use it now.
		s.wasted(&sent{bytes: p.Bytes}, "no_outcome")
		return
	}
	if e.sent != nil {
		// A prefetch superseded before its turn came was not used.
		s.wasted(e.sent, "expired")
	}
	e.sent = &sent{id: p.ID, worker: worker, bytes: p.Bytes, expires: p.Expires, tokens: p.Tokens, from: p.from, held: 1,
		loaded: s.now.Add(s.cfg.LoadTime(len(p.Tokens) - p.from))}
}

// Skipped records that p, returned by Due, was not sent (reason:
// no_worker, on_device, encode; empty: the sender refused it, counted
// there), releasing what Admit reserved.
func (s *Scheduler) Skipped(p Prefetch, reason string) {
	if p.admitted {
		s.mu.Lock()
		s.st.Outstanding -= p.Bytes
		s.mu.Unlock()
	}
	if reason != "" {
		s.m.Skipped.Inc(reason)
	}
}

// Stats are the totals so far.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Followed = len(s.entries)
	st.WasteRatio = ratio(st.WastedBytes, st.UsedBytes)
	st.MaxWaste, st.AllowanceBytes = s.cfg.MaxWaste, s.cfg.Bytes(int(s.cfg.WarmupTokens))
	return st
}

func ratio(a, b int64) float64 {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}

// allowed is the waste budget: wasted ≤ MaxWaste × used + the warm-up
// allowance, counting every prefetch in flight (outcome not known yet)
// as wasted, and the next one too, so that no outcome can take the ratio
// past the budget. The warm-up allows at least one prefetch, however
// large, before anything was used or risked.
func (s *Scheduler) allowed(next int64) bool {
	risked := s.st.WastedBytes + s.st.Outstanding
	if risked == 0 && s.st.UsedBytes == 0 && s.cfg.WarmupTokens > 0 {
		return true // the warm-up's first prefetch, however large
	}
	return float64(risked+next) <= s.cfg.MaxWaste*float64(s.st.UsedBytes)+float64(s.cfg.Bytes(int(s.cfg.WarmupTokens)))
}

type earlyResponse struct {
	worker   uint64
	at       time.Time
	toolCall bool
	toolTime time.Duration
}

// resolve settles prefetches a turn that ran on worker came for.
func (s *Scheduler) resolve(ps []*sent, worker uint64) {
	for _, p := range ps {
		if p.worker == worker {
			s.used(p)
		} else {
			s.wasted(p, "wrong_worker")
		}
	}
}

func (s *Scheduler) used(p *sent) {
	b := int64(float64(p.bytes) * min(max(p.held, 0), 1))
	s.st.Used++
	s.st.UsedBytes += b
	s.st.Outstanding -= b
	s.m.Used.Inc()
	s.m.UsedBytes.Add(uint64(b))
	if rest := p.bytes - b; rest > 0 {
		// Evicted from the device before the turn came.
		s.wasted(&sent{bytes: rest}, "evicted")
	}
}

func (s *Scheduler) wasted(p *sent, reason string) {
	b := p.bytes
	s.st.WastedBytes += b
	s.st.Outstanding -= b
	s.m.Wasted.Inc(reason)
	s.m.WastedBytes.Add(reason, uint64(b))
}

// advance moves the scheduler's clock (never back) and, at most once a
// second of it, ages out prefetches and continuations that ran out.
func (s *Scheduler) advance(at time.Time) {
	if at.After(s.now) {
		s.now = at
	}
	if s.now.Sub(s.lastTick) < time.Second {
		return
	}
	s.lastTick = s.now
	for el := s.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*entry)
		s.expire(e)
		if e.sent == nil && e.plan == nil && s.now.Sub(e.anchor) > s.cfg.Horizon {
			s.forget(e)
		}
		el = prev
	}
	for req, r := range s.early {
		if s.now.Sub(r.at) > s.cfg.Horizon {
			delete(s.early, req)
		}
	}
	for req, ps := range s.byReq {
		// No response said where the turn ran.
		if s.now.Sub(ps[0].at) > s.cfg.Horizon {
			for _, p := range ps {
				s.wasted(p, "no_outcome")
			}
			delete(s.byReq, req)
		}
	}
}

// expire settles what ran out at s.now for e.
func (s *Scheduler) expire(e *entry) {
	s.settleShadow(e, s.evNow, false)
	if e.sent != nil && !s.now.Before(e.sent.expires) {
		s.wasted(e.sent, "expired")
		e.sent = nil
	}
	if e.open && s.now.Sub(e.openAt) > s.cfg.Horizon {
		e.open = false
		s.cont[e.openClass].add(false)
	}
}

func (s *Scheduler) forget(e *entry) {
	s.expire(e)
	if e.sent != nil {
		s.wasted(e.sent, "no_outcome")
	}
	if e.open {
		s.cont[e.openClass].add(false)
	}
	s.forgetShadows(e)
	s.held -= int64(len(e.tokens))
	s.lru.Remove(e.el)
	delete(s.entries, e.key)
}

func (s *Scheduler) entry(key, session string, context bool) *entry {
	if e, ok := s.entries[key]; ok {
		s.lru.MoveToFront(e.el)
		return e
	}
	for len(s.entries) >= s.cfg.MaxSessions {
		s.forget(s.lru.Back().Value.(*entry))
	}
	e := &entry{key: key, session: session, context: context}
	e.el = s.lru.PushFront(e)
	s.entries[key] = e
	return e
}

// turn is a request under e's key at at.
func (s *Scheduler) turn(at time.Time, e *entry, t Turn, tokens []uint32) {
	s.settleShadow(e, at, true)
	s.expire(e)
	if !e.context && e.seen > 0 {
		s.announced.add(e.woke)
	}
	e.woke = false
	if e.seen > 0 {
		gap := at.Sub(e.anchor)
		if gap > 0 && gap <= s.cfg.Horizon {
			kind := s.kindIndex(e)
			x := math.Log(gap.Seconds())
			if e.kind == KindTool && e.toolTime > 0 {
				// The tool's learned time against what it took: the
				// spread of the tool predictions.
				s.pop[kind].addDev(x, math.Log(e.toolTime.Seconds()))
			} else {
				s.pop[kind].add(x)
				e.gaps.add(x)
			}
		}
		if e.open {
			e.open = false
			s.cont[e.openClass].add(gap <= s.cfg.Horizon)
		}
	}
	if e.plan != nil && !e.announced {
		// The turn came before its prefetch was due.
		e.plan = nil
		s.st.Late++
		s.m.Skipped.Inc("late")
	}
	if p := e.sent; p != nil {
		e.sent = nil
		if at.Before(p.expires) {
			p.at = at
			if t.Held != nil && len(p.tokens) > p.from {
				p.held = float64(t.Held(p.worker, p.tokens)-p.from) / float64(len(p.tokens)-p.from)
			}
			if at.Before(p.loaded) {
				// Still loading: the rest was not there for the turn.
				load := s.cfg.LoadTime(len(p.tokens) - p.from)
				p.held = min(p.held, 1-float64(p.loaded.Sub(at))/float64(max(load, 1)))
			}
			if r, ok := s.early[t.RequestID]; ok {
				s.resolve([]*sent{p}, r.worker) // its response came first
			} else {
				s.byReq[t.RequestID] = append(s.byReq[t.RequestID], p)
			}
		} else {
			s.wasted(p, "expired")
		}
	}
	e.seen++
	e.lastReq = t.RequestID
	if at.After(e.anchor) {
		e.anchor = at
	}
	r, early := s.early[t.RequestID]
	if early && !e.context && r.at.After(e.anchor) {
		e.anchor = r.at // its response came first
	}
	if e.announced {
		tokens = nil // its wake-ups prefetch it: nothing to keep
	}
	s.held += int64(len(tokens) - len(e.tokens))
	e.model, e.lora, e.salt, e.tokens = t.Model, t.LoraName, t.CacheSalt, tokens
	e.kind, e.toolTime = KindTurn, 0
	switch {
	case e.context:
		e.kind, e.openClass = KindContext, classContext
	case e.seen == 1:
		e.openClass = classFirst
	default:
		e.openClass = classLater
	}
	e.open, e.openAt = true, at
	// A session's next turn follows this one's response, which says
	// more (a tool call, and when): it is predicted again then (or now,
	// if the response came first: two streams), and nothing is sent for
	// it before (Due). The prediction made now only feeds the trial, so
	// that a response stream that lags still leaves evidence. A context
	// has no response of its own.
	e.answered = !e.context && early
	if e.answered && r.toolCall {
		e.kind, e.toolTime, e.openClass = KindTool, r.toolTime, classTool
	}
	if !e.context || e.seen > 1 {
		s.schedule(e)
	}
}

func (s *Scheduler) kindIndex(e *entry) int {
	switch {
	case e.context:
		return 2
	case e.kind == KindTool:
		return 1
	}
	return 0
}

// schedule predicts e's next turn from its anchor and plans a prefetch
// if the expected waste is within the budget's ratio.
func (s *Scheduler) schedule(e *entry) {
	e.plan = nil
	e.gen++
	s.promote(e, e.anchor) // the plan it had is dropped unsent
	if len(e.tokens) == 0 || e.announced {
		return
	}
	pop := s.pop[s.kindIndex(e)]
	var m, sd float64
	switch {
	case e.kind == KindTool && e.toolTime > 0:
		m = math.Log(e.toolTime.Seconds())
		if pop.n == 0 {
			return // how good the tool predictions are is not known yet
		}
		sd = pop.sd()
	default:
		if pop.n == 0 && e.gaps.n == 0 {
			return // nothing learnt yet
		}
		w, k := e.gaps.n, s.cfg.PriorWeight
		if pop.n == 0 {
			k = 0
		}
		m = (w*e.gaps.m + k*pop.m) / (w + k)
		sd = (w*e.gaps.sd() + k*pop.sd()) / (w + k)
	}
	s.st.Predicted++
	s.m.Predictions.Inc(e.kind)
	load := s.cfg.LoadTime(len(e.tokens))
	center := seconds(math.Exp(m))
	lo := seconds(math.Exp(m - sd))
	sendGap := max(lo-load, 0)
	hold := min(seconds(math.Exp(m+sd))-sendGap, s.cfg.MaxHold)
	expGap := sendGap + hold
	if expGap <= sendGap {
		return
	}
	// The chances, on the learned log-normal gap, that the turn comes
	// before the prefetch is sent (nothing lost), while it is held (used,
	// if it lands on the worker), or after (wasted); and the chance that
	// a turn comes at all (the class's learned share).
	pCont := s.cont[e.openClass].p()
	pEarly := phi((logSec(sendGap) - m) / sd)
	pLate := 1 - phi((logSec(expGap)-m)/sd)
	pIn := 1 - pEarly - pLate
	// A turn a wake-up announces gets the wake-up's prefetch (and goes
	// where it went): a header-free one for it saves nothing more, and
	// is wasted if it went elsewhere.
	// Wake-ups are opt-in: until turns are seen announced, assume not
	// (one pseudo-observation of an unannounced turn).
	pA := 0.0
	if !e.context {
		pA = s.announced.yes / (s.announced.all + 1)
	}
	used := pCont * pIn * (1 - pA)
	waste := (1 - pCont) + pCont*pLate + pCont*pIn*pA
	if used <= 0 || waste > s.cfg.MaxWaste*used {
		s.st.Unlikely++
		s.m.Skipped.Inc("unlikely")
		return
	}
	p := &Prefetch{ID: "ahead-" + e.kind + "-" + e.key[2:] + "-" + strconv.FormatUint(e.gen, 10), Key: e.key, Session: e.session,
		Kind: e.kind, Model: e.model, LoraName: e.lora, CacheSalt: e.salt, Tokens: e.tokens,
		Bytes: s.cfg.Bytes(len(e.tokens)), Arrival: e.anchor.Add(center), Expires: e.anchor.Add(expGap)}
	e.plan = p
	s.follow(e, p, e.anchor.Add(sendGap))
	heap.Push(&s.due, dueItem{at: e.anchor.Add(sendGap), key: e.key, gen: e.gen})
}

func seconds(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

func logSec(d time.Duration) float64 {
	if d <= 0 {
		return math.Inf(-1)
	}
	return math.Log(d.Seconds())
}

func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// gapStats is an exponentially weighted mean of log gaps and of their
// absolute deviation: the first samples are averaged, later ones weigh
// 1/gapWindow.
type gapStats struct{ n, m, d float64 }

const (
	gapWindow = 32
	// minSD keeps a session with identical gaps from a zero-width window.
	minSD = 0.1
)

func (g *gapStats) add(x float64) {
	g.n++
	a := 1 / min(g.n, gapWindow)
	if g.n == 1 {
		g.m = x
		return
	}
	g.d += a * (math.Abs(x-g.m) - g.d)
	g.m += a * (x - g.m)
}

// addDev learns only the deviation of x from a prediction pred.
func (g *gapStats) addDev(x, pred float64) {
	g.n++
	a := 1 / min(g.n, gapWindow)
	g.d += a * (math.Abs(x-pred) - g.d)
	g.m += a * (x - g.m)
}

// sd is the standard deviation of a normal with mean absolute deviation d.
func (g gapStats) sd() float64 { return max(g.d*math.Sqrt(math.Pi/2), minSD) }

// share is a decayed success share with a uniform prior.
type share struct{ yes, all float64 }

const shareDecay = 1.0 / 1024

func (c *share) add(ok bool) {
	c.yes *= 1 - shareDecay
	c.all *= 1 - shareDecay
	c.all++
	if ok {
		c.yes++
	}
}

func (c share) p() float64 { return (c.yes + 1) / (c.all + 2) }

type dueItem struct {
	at  time.Time
	key string
	gen uint64
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
