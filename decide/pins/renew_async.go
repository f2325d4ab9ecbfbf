package pins

import (
	"container/heap"
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/hintstream/hintstream/streams"
)

// Renewals off the hot path: renewing inside the request and response
// handlers cost two KV round trips and a pin message per due pin, paid by
// whichever event came next, so 45,000 pinned sessions cut responses
// from ~1,000/s to ~70/s. RunRenewals moves the work to one goroutine
// with a rate budget (Pinning.RenewRate, renewals/s, in bursts of at
// most a tenth of a second's worth, so that the bus sees a steady trickle
// rather than spikes that would delay wake-ups): due pins are taken earliest first, as many as the
// budget allows, and their KV writes go out together (SlotStore's
// RenewBatch, when it has one: one pipelined round of reads and one of
// writes for the batch). A due pin the budget cannot reach waits; one
// whose pin lapsed while it waited is dropped and counted in
// pins.renewal_skipped|budget, since the budget is then below what the
// sessions need and the oldest are the least likely to come back.

// DefaultPinRenewRate is the default renewal budget, renewals/s. A
// default 50 s pin (30 s expected tool time x 1.5 + 5 s) is renewed every
// 25 s, so 1,000/s keeps 25,000 concurrent long tool calls pinned, more
// than a cluster has sessions in a tool call past half their expected
// time. Each renewal is one pipelined KV write and one pin message to
// the Mooncake master: measured with BenchmarkRenewalLoad, about a tenth
// of a core at 1,000/s (nats-server's share included), 5-18% of the CPU
// that 10,000 responses cost there. Raise it when
// pins.renewal_skipped{reason="budget"} grows and the bus has room.
const DefaultPinRenewRate = 1000

// renewBatchMax bounds one batch of renewals (one pipelined KV round).
const renewBatchMax = 64

// SlotRenewal is one renewal of a batch: set session's pin of trigger to
// expire at ExpiresAtMs. With Rev, the revision of the record as this
// member last wrote it, the store may skip reading it: it writes Record
// (with the new expiry) conditionally on Rev still being the latest.
type SlotRenewal struct {
	Session, Trigger string
	ExpiresAtMs      int64
	Rev              uint64
	Record           PinRecord
}

// BatchRenewer is a SlotStore that renews many slots in one pipelined
// round; results are in the order of rs, with SlotStore.Renew's meaning.
type BatchRenewer interface {
	RenewBatch(ctx context.Context, rs []SlotRenewal) []RenewResult
}

// RenewResult is one renewal's outcome; Rev is the record's new revision
// (0 when unknown).
type RenewResult struct {
	OK  bool
	Rev uint64
	Err error
}

func (p *Pinning) renewRate() float64 {
	if p.RenewRate > 0 {
		return p.RenewRate
	}
	return DefaultPinRenewRate
}

// RunRenewals renews pins on its own goroutine from now on, within the
// rate budget, until ctx is done; the returned channel closes when it
// has stopped. Call it before the consumers start, at most once.
func (p *Pinning) RunRenewals(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if p.RenewMax <= 0 {
		close(done)
		return done
	}
	r := &p.renew
	r.mu.Lock()
	r.async, r.wake = true, make(chan struct{}, 1)
	r.mu.Unlock()
	go func() {
		defer close(done)
		// In bursts of at most a tenth of a second's worth.
		burst := int(max(p.renewRate()/10, 1))
		lim := rate.NewLimiter(rate.Limit(p.renewRate()), burst)
		wait := time.NewTimer(time.Second)
		defer wait.Stop()
		for {
			now := time.Now()
			batch, clock, more := p.takeDue(int(min(lim.TokensAt(now), renewBatchMax)))
			if len(batch) > 0 {
				lim.AllowN(now, len(batch))
				p.renewBatch(ctx, batch, clock)
			}
			next := time.Second // the service's Tick wakes us at least this often
			if more {
				// Until a full batch is affordable: batches, not a trickle
				// of single writes, keep the KV round trips coalesced.
				res := lim.ReserveN(now, min(renewBatchMax, burst))
				next = res.DelayFrom(now)
				res.CancelAt(now)
			}
			if next <= 0 {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if !wait.Stop() {
				select {
				case <-wait.C:
				default:
				}
			}
			wait.Reset(next)
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
			case <-wait.C:
			}
		}
	}()
	return done
}

// renewBatch renews batch at now, with one KV round when the slot store
// can batch, and queues again those that stay.
func (p *Pinning) renewBatch(ctx context.Context, batch []*renewal, now time.Time) {
	type job struct {
		x   *renewal
		ttl time.Duration
	}
	jobs := make([]job, 0, len(batch))
	reqs := make([]SlotRenewal, 0, len(batch))
	for _, x := range batch {
		if x.dropped.Load() {
			continue
		}
		left := x.completed.Add(p.RenewMax).Sub(now)
		if left <= 0 {
			p.Counters.PinsRenewalEnded.Inc()
			p.returns.observe(p.Learner, x.tools, false)
			continue
		}
		expected, _ := p.Learner.Expected(x.tools)
		ttl := min(p.TTL.TTL(expected), left)
		jobs = append(jobs, job{x, ttl})
		reqs = append(reqs, SlotRenewal{Session: x.session, Trigger: x.pin.Trigger, ExpiresAtMs: now.Add(ttl).UnixMilli(),
			Rev: x.rev, Record: PinRecord{Slot: x.pin.Slot, Trigger: x.pin.Trigger, Tools: x.tools,
				CompletedAtMs: x.completed.UnixMilli()}})
	}
	if len(jobs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, streams.DefaultOpTimeout)
	defer cancel()
	var res []RenewResult
	if br, ok := p.Slots.(BatchRenewer); ok {
		res = br.RenewBatch(cctx, reqs)
	} else {
		res = make([]RenewResult, len(reqs))
		for i, q := range reqs {
			res[i].Rev, res[i].OK, res[i].Err = p.Slots.Renew(cctx, q.Session, q.Trigger, q.ExpiresAtMs)
		}
	}
	var again []*renewal
	for i, j := range jobs {
		switch {
		case res[i].Err != nil:
			// Try again shortly rather than renew a slot that may have
			// been released.
			p.Log.Debug("pin renewal not recorded", "session", j.x.session, "err", res[i].Err)
			p.Counters.PinsRenewalErrors.Inc()
			j.x.due = now.Add(time.Second)
			again = append(again, j.x)
		case !res[i].OK: // the next turn (or a newer pin) took the slot
		default:
			j.x.rev = res[i].Rev
			p.renewed(j.x, now, j.ttl)
			again = append(again, j.x)
		}
	}
	r := &p.renew
	r.mu.Lock()
	for _, x := range again {
		heap.Push(&r.q, x)
	}
	r.mu.Unlock()
}
