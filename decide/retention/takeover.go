package retention

import "time"

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Latest is the latest event time the planner has observed (zero before
// any).
func (p *Planner) Latest() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest
}

// SetGroup makes Stats report the group's leadership, from state.
func (p *Planner) SetGroup(state func() Leadership) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.group = state
}

// Takeover prepares the planner of a member that starts sending the
// group's plans: it forgets which slots it believes pinned (a shadow plan
// sent nothing), so its next plan, made at once rather than an interval
// later, pins every slot it wants. With releaseOthers (another member led
// before), that plan also releases every other slot of the namespace,
// which the previous leader may hold; without, what this member never
// sent is left alone, as a single member's planner does. term is the
// lock revision the member took the lock at (Leadership.Term): the plans'
// pins carry revisions above every earlier leader's (Pin.Revision), and
// message ids of their own.
func (p *Planner) Takeover(releaseOthers bool, term uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.term, p.seq = term, 0
	p.slots = [Bands * Shards]slotState{}
	p.lastPlan = time.Time{}
	if !releaseOthers {
		return
	}
	for i := range p.slots {
		// Zero sum and expiry: a wanted slot is pinned again, any other
		// released.
		p.slots[i].held = true
	}
}
