package ahead

import (
	"math"
	"time"
)

// The trial: every plan that comes due is also followed as if it had been
// sent, judged by timing alone (its turn came while it would have been
// held, or not), whether it was sent or not. No prefetch is sent while
// these would-be prefetches waste more than MaxWaste × what they would
// have used, or before one of them would have been used: a predictor that
// has not shown it can keep within the budget, with this one wasted too,
// spends none of it. Without
// the trial the warm-up allowance was spent on the first guesses of a
// predictor that had never been right, and on traffic it cannot predict
// that waste stays, uncovered by any use, for good.

// trial is the would-be accounting, in bytes and in prefetches, decayed
// so that a predictor that turns bad closes the gate again.
type trial struct{ used, wasted, nUsed, nWasted float64 }

// trialZ is the one-sided 90% normal quantile: the trial opens only when
// the share of would-be prefetches used is, at that confidence, at least
// what the budget needs (1 / (1 + MaxWaste)), so that a few lucky guesses
// do not open it.
const trialZ = 1.2816

// trialDecay weighs each outcome against the last ~1k.
const trialDecay = 1.0 / 1024

// shadow is a plan followed by the trial under its key: it would have
// been sent at send and held until expires. An entry has at most one
// planned and one held (sent).
type shadow struct {
	bytes         float64
	send, expires time.Time
	// unanswered: planned before its turn's response, which is never
	// sent (Due); it is judged only if the next turn comes first (the
	// response stream lags), and dropped once the response comes.
	unanswered bool
}

func (t *trial) add(bytes float64, used bool) {
	for _, x := range []*float64{&t.used, &t.wasted, &t.nUsed, &t.nWasted} {
		*x *= 1 - trialDecay
	}
	if used {
		t.used += bytes
		t.nUsed++
	} else {
		t.wasted += bytes
		t.nWasted++
	}
}

// open says the trial allows sending next bytes under a budget of
// maxWaste: the would-be prefetches stay within it even if this one is
// wasted, as the budget counts the next prefetch (allowed).
func (t trial) open(maxWaste, next float64) bool {
	return t.used > 0 && t.wasted+next <= maxWaste*t.used &&
		wilsonLower(t.nUsed, t.nUsed+t.nWasted, trialZ) >= 1/(1+maxWaste)
}

// wilsonLower is the lower end of the Wilson score interval of a share of
// k successes in n trials at normal quantile z.
func wilsonLower(k, n, z float64) float64 {
	if n <= 0 {
		return 0
	}
	p, z2 := k/n, z*z
	return (p + z2/(2*n) - z*math.Sqrt(p*(1-p)/n+z2/(4*n*n))) / (1 + z2/n)
}

// follow starts the trial's shadow of p, planned under e to be sent at
// send, in place of the plan e had (dropped unsent if its time had not
// come by e's latest event).
func (s *Scheduler) follow(e *entry, p *Prefetch, send time.Time) {
	s.promote(e, e.anchor)
	e.shadow = &shadow{bytes: float64(p.Bytes), send: send, expires: p.Expires, unanswered: !e.context && !e.answered}
}

// promote makes e's planned shadow the one held once its send time has
// come by at, as Queued does with a real one: the one it replaces was not
// used. A plan whose time has not come is dropped.
func (s *Scheduler) promote(e *entry, at time.Time) {
	if sh := e.shadow; sh != nil && sh.unanswered && e.answered {
		e.shadow = nil // its turn's response came: it would not be sent
		return
	}
	if sh := e.shadow; sh != nil && !at.Before(sh.send) {
		if e.shadowSent != nil {
			s.trial.add(e.shadowSent.bytes, false)
		}
		e.shadowSent = sh
	}
	e.shadow = nil
}

// settleShadow judges e's shadows at at: at a turn (turn true) the one
// held is used if it has not run out; otherwise (run out, forgotten) it
// is wasted.
func (s *Scheduler) settleShadow(e *entry, at time.Time, turn bool) {
	if turn {
		s.promote(e, at)
	} else if e.shadow != nil && !at.Before(e.shadow.expires) {
		s.promote(e, at)
	}
	if sh := e.shadowSent; sh != nil && (turn || !at.Before(sh.expires)) {
		s.trial.add(sh.bytes, turn && at.Before(sh.expires))
		e.shadowSent = nil
	}
}

// forgetShadows settles e's shadows as e is forgotten.
func (s *Scheduler) forgetShadows(e *entry) {
	s.promote(e, s.now)
	if e.shadowSent != nil {
		s.trial.add(e.shadowSent.bytes, false)
		e.shadowSent = nil
	}
}

// event moves the event clock to at (never back).
func (s *Scheduler) event(at time.Time) {
	if at.After(s.evNow) {
		s.evNow = at
	}
}
