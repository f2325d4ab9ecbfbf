package pins

import (
	"container/heap"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/streams"
)

// Renewal: a tool call that outlasts its expected time would lose its
// pin, and with it, under L3 pressure, its pages. So a member keeps the
// pins it sent in a queue and, once half of a pin's TTL has passed
// without the session's next turn, pins the slot again for the tool time
// expected now (which grows as longer tool times are observed), until the
// tool call has lasted Pinning.RenewMax. The renewal clock is the later of
// Pinning's clock and the newest event time seen (a request's
// received_at_ms, a response's completed_at_ms), and Tick advances it, so
// a replay renews exactly where the live run did. Renewals live in the
// member that pinned: if it dies, its pins lapse as they would without
// renewal.

// renewal is one pin awaiting its session's next turn.
type renewal struct {
	due       time.Time
	session   string
	pin       actions.Pin // as first sent; Trigger is the response's request id
	tools     []string
	completed time.Time // when the tool call began
	expires   time.Time // when the pin last sent lapses (renewal clock)
	rev       uint64    // the slot record's revision we last wrote; 0: unknown
	n         int       // renewals so far
	score     float64   // while due: its chance of a next turn (renew_score.go)
	// dropped: the pin budget released the pin (budget.go); it is not
	// renewed again.
	dropped atomic.Bool
}

type renewQueue []*renewal

func (q renewQueue) Len() int           { return len(q) }
func (q renewQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q renewQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *renewQueue) Push(x any)        { *q = append(*q, x.(*renewal)) }
func (q *renewQueue) Pop() any {
	old := *q
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return r
}

// renewals is Pinning's queue and clock.
type renewals struct {
	mu    sync.Mutex
	q     renewQueue
	ready readyQueue // due, waiting for the budget (renew_score.go)
	swept time.Time  // last sweep of ready
	clock time.Time
	// async: RunRenewals owns the renewing; Tick only advances the clock
	// and wakes it (renew_async.go).
	async bool
	wake  chan struct{}
}

// eventTime is the time an event stamps itself with (ms), or else its
// stream timestamp at (zero when unknown).
func eventTime(at time.Time, ms int64) time.Time {
	if ms > 0 {
		return time.UnixMilli(ms)
	}
	return at
}

// schedule queues pin, just sent with ttl, for renewal once half of ttl
// has passed on the renewal clock.
// It returns the renewal (nil when pins are not renewed) and the
// renewal clock's now.
func (p *Pinning) schedule(session string, pin actions.Pin, tools []string, completed time.Time, ttl time.Duration, rev uint64) (*renewal, time.Time) {
	r := &p.renew
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock
	if t := p.now(); t.After(now) {
		now = t
	}
	if p.RenewMax <= 0 || session == "" {
		return nil, now
	}
	x := &renewal{due: now.Add(ttl / 2), session: session, pin: pin, tools: tools, completed: completed,
		expires: now.Add(ttl), rev: rev}
	heap.Push(&r.q, x)
	return x, now
}

// Pending returns the number of pins awaiting renewal or their
// session's next turn.
func (p *Pinning) Pending() int {
	p.renew.mu.Lock()
	defer p.renew.mu.Unlock()
	return len(p.renew.q) + len(p.renew.ready)
}

// Tick advances the renewal clock to at (if later) and renews the pins
// due by then; once RunRenewals runs, it only wakes that goroutine, so
// handlers never wait for a renewal. Safe for concurrent use; the live
// service calls it every second, the engine with each event's time. ctx
// bounds the renewals' store writes (each within streams.DefaultOpTimeout).
func (p *Pinning) Tick(ctx context.Context, at time.Time) {
	if p.RenewMax <= 0 {
		return
	}
	r := &p.renew
	r.mu.Lock()
	if now := p.now(); now.After(r.clock) {
		r.clock = now
	}
	if at.After(r.clock) {
		r.clock = at
	}
	if r.async {
		r.mu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default: // already woken
		}
		return
	}
	now := r.clock
	var due []*renewal
	for len(r.q) > 0 && !r.q[0].due.After(now) {
		due = append(due, heap.Pop(&r.q).(*renewal))
	}
	r.mu.Unlock()
	for _, x := range due {
		if p.renewOne(ctx, x, now) {
			r.mu.Lock()
			heap.Push(&r.q, x)
			r.mu.Unlock()
		}
	}
}

// renewOne pins x's slot again at now, unless its session came back (the
// slot record is gone or names a newer pin) or the tool call has lasted
// RenewMax; it reports whether x stays queued.
func (p *Pinning) renewOne(ctx context.Context, x *renewal, now time.Time) bool {
	if x.dropped.Load() {
		return false
	}
	left := x.completed.Add(p.RenewMax).Sub(now)
	if left <= 0 {
		p.Counters.PinsRenewalEnded.Inc()
		p.returns.observe(p.Learner, x.tools, false)
		return false
	}
	expected, _ := p.Learner.Expected(x.tools)
	ttl := min(p.TTL.TTL(expected), left)
	ctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	rev, ok, err := p.Slots.Renew(ctx, x.session, x.pin.Trigger, now.Add(ttl).UnixMilli())
	if err != nil {
		// Try again on a later tick rather than renew a slot that may
		// have been released.
		p.Log.Warn("pin renewal not recorded", "session", x.session, "err", err)
		x.due = now.Add(time.Second)
		return true
	}
	if !ok {
		return false // the next turn (or a newer pin) took the slot
	}
	x.rev = rev
	p.renewed(x, now, ttl)
	return true
}

// renewed sends x's renewal pin, recorded with ttl at now, and schedules
// its next.
func (p *Pinning) renewed(x *renewal, now time.Time, ttl time.Duration) {
	x.n++
	pin := x.pin
	pin.Trigger = x.pin.Trigger + "/renew-" + strconv.Itoa(x.n) // its own message id
	pin.TTL = ttl
	pin.Revision = x.rev
	p.send(pin, "renew", p.TTL.Deadline(ttl), nil)
	x.due, x.expires = now.Add(ttl/2), now.Add(ttl)
	p.budgetRenewed(x.session, x.pin.Trigger, x.expires)
	if p.Observer != nil {
		p.Observer.Renewed(x.session, x.expires)
	}
}
