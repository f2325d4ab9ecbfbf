package pins

import (
	"container/heap"
	"time"

	"github.com/hintstream/hintstream/actions"
)

// Test hooks for the external tests (renew_bench_test.go).

// SlotKey is slotKey.
var SlotKey = slotKey

// QueueRenewal queues a renewal of pin due at now, as if sent then.
func (p *Pinning) QueueRenewal(session string, pin actions.Pin, now, expires time.Time, rev uint64) {
	p.renew.mu.Lock()
	defer p.renew.mu.Unlock()
	heap.Push(&p.renew.q, &renewal{due: now, session: session, completed: now, expires: expires, rev: rev, pin: pin})
}

// RenewRateInUse is renewRate.
func (p *Pinning) RenewRateInUse() float64 { return p.renewRate() }
