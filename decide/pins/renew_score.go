package pins

import (
	"container/heap"
	"sync"
	"time"

	"github.com/hintstream/hintstream/decide/tooltime"
)

// Which renewals the budget buys. When more pins are due than
// Pinning.RenewRate allows, the due ones wait in a queue ordered by how
// likely their session is to come back, and the budget is spent from the
// top:
//
//	score = r(tool) x E / (E + elapsed)
//
// E is the learned expected time of the pin's tools (tooltime.Learner),
// elapsed the time since the tool call began, and r(tool) the learned
// share of the tool's pins whose session came back, (returned + 1) /
// (returned + abandoned + 2): returned when a next turn takes the slot,
// abandoned when its renewals reach RenewMax without one. A tool call
// already far past its expected time is ever less likely to end in a
// next turn (E / (E + elapsed) halves at elapsed = E), and a tool whose
// sessions are mostly abandoned is worth less than one whose sessions
// come back. A due renewal left waiting until its pin lapsed is dropped
// and counted (pins.renewal_skipped|budget): with a budget below the
// need, those are the least likely sessions, not the earliest due.

// returnStats counts returned and abandoned pins per tool label (a
// bounded set, tooltime.Learner.Label).
type returnStats struct {
	mu sync.Mutex
	by map[string][2]uint64 // label -> {returned, abandoned}
}

func (s *returnStats) observe(l *tooltime.Learner, tools []string, returned bool) {
	label := toolLabel(l, tools)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string][2]uint64{}
	}
	c := s.by[label]
	if returned {
		c[0]++
	} else {
		c[1]++
	}
	s.by[label] = c
}

// rate is the smoothed share of returned pins of tools' label.
func (s *returnStats) rate(l *tooltime.Learner, tools []string) float64 {
	label := toolLabel(l, tools)
	s.mu.Lock()
	c := s.by[label]
	s.mu.Unlock()
	return float64(c[0]+1) / float64(c[0]+c[1]+2)
}

func toolLabel(l *tooltime.Learner, tools []string) string {
	if l == nil {
		return tooltime.Other
	}
	if len(tools) == 0 {
		return l.Label("")
	}
	return l.Label(tools[0])
}

// score is x's chance of a next turn, as above, at now.
func (p *Pinning) score(x *renewal, now time.Time) float64 {
	var expected time.Duration
	if p.Learner != nil {
		expected, _ = p.Learner.Expected(x.tools)
	}
	e := max(expected.Seconds(), 1e-3)
	elapsed := max(now.Sub(x.completed).Seconds(), 0)
	return p.returns.rate(p.Learner, x.tools) * e / (e + elapsed)
}

// readyQueue holds due renewals, the most likely to be needed first.
type readyQueue []*renewal

func (q readyQueue) Len() int { return len(q) }
func (q readyQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].due.Before(q[j].due)
}
func (q readyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)   { *q = append(*q, x.(*renewal)) }
func (q *readyQueue) Pop() any {
	old := *q
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return r
}

// readySweep is how often the waiting renewals are rescored and those
// whose pin lapsed dropped, so that the queue holds only live pins.
const readySweep = time.Second

// takeDue pops up to n renewals, the likeliest first among those due,
// dropping (and counting) those whose pin lapsed while they waited for
// the budget; more reports that due renewals are left.
func (p *Pinning) takeDue(n int) (batch []*renewal, now time.Time, more bool) {
	r := &p.renew
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := p.now(); t.After(r.clock) {
		r.clock = t
	}
	now = r.clock
	for len(r.q) > 0 && !r.q[0].due.After(now) {
		x := heap.Pop(&r.q).(*renewal)
		x.score = p.score(x, now)
		heap.Push(&r.ready, x)
	}
	if now.Sub(r.swept) >= readySweep {
		r.swept = now
		kept := r.ready[:0]
		for _, x := range r.ready {
			if !x.expires.IsZero() && !now.Before(x.expires) {
				p.Counters.PinsRenewalSkipped.Inc("budget")
				continue
			}
			x.score = p.score(x, now)
			kept = append(kept, x)
		}
		clear(r.ready[len(kept):])
		r.ready = kept
		heap.Init(&r.ready)
	}
	for len(r.ready) > 0 && len(batch) < n {
		x := heap.Pop(&r.ready).(*renewal)
		if !x.expires.IsZero() && !now.Before(x.expires) {
			p.Counters.PinsRenewalSkipped.Inc("budget")
			continue
		}
		batch = append(batch, x)
	}
	return batch, now, len(r.ready) > 0
}
