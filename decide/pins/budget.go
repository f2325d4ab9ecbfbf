package pins

import (
	"context"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/streams"
)

// The pin budget (Pinning.BudgetTokens, --pin-budget-tokens of run and replay): a store
// under pressure cannot keep every tool call's pages, and pins beyond
// its capacity only fight each other (pinned pages are evicted when
// nothing else is, least recently used first), which is LRU again, and
// take the room of the turns in flight. So a member keeps at most
// BudgetTokens tokens' pages pinned at once: when a new pin passes the
// budget, it releases the pins whose sessions are expected back last,
// by the learned gaps of their tools given how long each call has run
// (tooltime.Learner.Remaining), until the rest fit. A call that has
// outlasted every gap seen of its tools goes first; a pin lapsed or
// released at its session's next turn no longer counts. With no budget
// (0, the default) nothing changes. The budget is the member's own: a
// group of N members sets each to the store's capacity / N. A renewal
// already writing its slot record when the budget releases the pin may
// still land after the release (the higher revision wins at the master):
// that pin then lasts one more TTL, uncounted.

// budgetPin is one live pin the budget counts.
type budgetPin struct {
	session, slot, trigger string
	tokens                 int64
	tools                  []string
	completed, expires     time.Time
	renewal                *renewal // nil when pins are not renewed
}

// pinBudget holds a member's live pins within Pinning.BudgetTokens.
type pinBudget struct {
	mu   sync.Mutex
	pins map[string]*budgetPin // by session
	used int64
}

// budgeted records a pin just sent for session and releases the pins
// expected back last while the live ones pass the budget.
func (p *Pinning) budgeted(ctx context.Context, bp *budgetPin, now time.Time) {
	if p.BudgetTokens <= 0 {
		return
	}
	b := &p.budget
	b.mu.Lock()
	if b.pins == nil {
		b.pins = map[string]*budgetPin{}
	}
	if old, ok := b.pins[bp.session]; ok {
		b.used -= old.tokens
	}
	b.pins[bp.session] = bp
	b.used += bp.tokens
	var drop []*budgetPin
	if b.used > p.BudgetTokens {
		for s, x := range b.pins {
			if !x.expires.After(now) {
				b.used -= x.tokens
				delete(b.pins, s)
			}
		}
	}
	if b.used > p.BudgetTokens {
		// Each live pin ranked once, by when its session is expected back.
		type ranked struct {
			x *budgetPin
			r time.Duration
		}
		cands := make([]ranked, 0, len(b.pins))
		for _, x := range b.pins {
			if x != bp {
				cands = append(cands, ranked{x, p.Learner.Remaining(x.tools, now.Sub(x.completed))})
			}
		}
		// With nothing left to release, the new pin alone passes the
		// budget: it stays. Usually one pin goes: a selection, not a sort.
		for b.used > p.BudgetTokens && len(cands) > 0 {
			k := 0
			for j := 1; j < len(cands); j++ {
				if c, v := cands[j], cands[k]; c.r > v.r || (c.r == v.r && before(c.x, v.x)) {
					k = j
				}
			}
			x := cands[k].x
			cands[k] = cands[len(cands)-1]
			cands = cands[:len(cands)-1]
			b.used -= x.tokens
			delete(b.pins, x.session)
			if x.renewal != nil {
				x.renewal.dropped.Store(true)
			}
			drop = append(drop, x)
		}
	}
	b.mu.Unlock()
	for _, x := range drop {
		p.releaseOverBudget(ctx, x, now)
	}
}

// releaseOverBudget releases x's pin: its slot record is marked lapsed
// (Slots.Renew to now), whose revision orders the release after the pin,
// and kept, so that the session's next turn still teaches the learner.
func (p *Pinning) releaseOverBudget(ctx context.Context, x *budgetPin, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	rev, ok, err := p.Slots.Renew(ctx, x.session, x.trigger, now.UnixMilli())
	if err != nil {
		// The pin lapses at its TTL instead.
		p.Log.Warn("over-budget pin release not recorded", "session", x.session, "err", err)
		return
	}
	if !ok {
		return // the next turn took the slot, and released it
	}
	p.Counters.PinsBudgetReleased.Inc()
	p.send(actions.Pin{Trigger: x.trigger + "/budget", Slot: x.slot, Revision: rev}, "release", time.Second, nil)
}

// unbudget stops counting session's pin (its next turn came).
func (p *Pinning) unbudget(session string) {
	if p.BudgetTokens <= 0 {
		return
	}
	b := &p.budget
	b.mu.Lock()
	if x, ok := b.pins[session]; ok {
		b.used -= x.tokens
		delete(b.pins, session)
	}
	b.mu.Unlock()
}

// budgetRenewed moves the end of session's counted pin to expires, if
// it is still the pin of trigger.
func (p *Pinning) budgetRenewed(session, trigger string, expires time.Time) {
	if p.BudgetTokens <= 0 {
		return
	}
	b := &p.budget
	b.mu.Lock()
	if x, ok := b.pins[session]; ok && x.trigger == trigger {
		x.expires = expires
	}
	b.mu.Unlock()
}

// BudgetUsed is the tokens' pages the member's live pins hold, as the
// budget counts them (for tests and inspection).
func (p *Pinning) BudgetUsed() int64 {
	p.budget.mu.Lock()
	defer p.budget.mu.Unlock()
	return p.budget.used
}

// before orders pins the budget ranks alike: the older call first, then
// by session, so that a release never depends on a map's order.
func before(a, b *budgetPin) bool {
	if !a.completed.Equal(b.completed) {
		return a.completed.Before(b.completed)
	}
	return a.session < b.session
}
