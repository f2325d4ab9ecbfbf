package pins

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
)

// fakeClock is a renewal clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *fakeClock) add(d time.Duration) { c.set(c.now().Add(d)) }

// asyncPins is a Pinning over a real slot bucket and a real pin socket,
// renewing on its own goroutine at rate renewals/s.
func asyncPins(t *testing.T, rate float64, opts ...BucketOption) (*Pinning, *fakeClock, <-chan struct{}) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	slots, err := OpenPinSlots(context.Background(), js, "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := pinSink(t)
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = pool.Close(cctx)
	})
	clock := &fakeClock{t: time.Now()}
	p := &Pinning{Endpoint: ep, Slots: slots, Learner: tooltime.New(tooltime.DefaultConfig()),
		TTL: actions.DefaultTTLConfig(), Sender: pool, RenewMax: time.Hour, RenewRate: rate,
		Counters: metrics.New(), Log: discard(), Now: clock.now}
	ctx, cancel := context.WithCancel(context.Background())
	done := p.RunRenewals(ctx)
	t.Cleanup(func() { cancel(); <-done })
	return p, clock, done
}

// pinned records n sessions' pins (TTL ttl, at the clock's now) and
// queues them for renewal.
func pinned(t *testing.T, p *Pinning, clock *fakeClock, n int, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	now := clock.now()
	for i := range n {
		s := fmt.Sprintf("s-%d", i)
		pin := actions.Pin{Trigger: "r-" + s, Slot: "session:" + s, Keys: []string{"k"}, TTL: ttl, Priority: 1, Tokens: 16}
		if _, err := p.Slots.Put(ctx, s, PinRecord{Slot: pin.Slot, Trigger: pin.Trigger, CompletedAtMs: now.UnixMilli(),
			ExpiresAtMs: now.Add(ttl).UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		p.schedule(s, pin, nil, now, ttl, 0)
	}
}

// Renewals run on their own goroutine within the budget: Tick returns at
// once however many are due; they are renewed at the budget's pace, the
// rest wait; those whose pin lapses while they wait are
// skipped and counted.
func TestRenewalsWithinBudget(t *testing.T) {
	const n, rate = 60, 10
	p, clock, _ := asyncPins(t, rate)
	pinned(t, p, clock, n, 10*time.Second)
	start := time.Now()
	clock.add(5 * time.Second) // every one due
	p.Tick(context.Background(), clock.now())
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("Tick took %v with %d renewals due: it renewed inline", d, n)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return p.Counters.HintsRenewQueued.Value() >= rate },
		"%d renewals", rate)
	clock.add(6 * time.Second) // past every first pin's expiry
	natstest.Eventually(t, 10*time.Second, func() bool {
		return p.Counters.HintsRenewQueued.Value()+p.Counters.PinsRenewalSkipped.Value("budget") == n
	}, "every due renewal renewed or skipped: renewed %d, skipped %d",
		p.Counters.HintsRenewQueued.Value(), p.Counters.PinsRenewalSkipped.Value("budget"))
	renewed := p.Counters.HintsRenewQueued.Value()
	// The budget: rate per second of wall time (and a burst of a tenth).
	if limit := uint64(rate*time.Since(start).Seconds() + rate/10 + 1); renewed > limit {
		t.Fatalf("%d renewals in %v, over the budget of %d", renewed, time.Since(start), limit)
	}
	if skipped := p.Counters.PinsRenewalSkipped.Value("budget"); skipped < n/2 {
		t.Fatalf("%d skipped for budget, want most of the %d beyond it", skipped, n-rate)
	}
	// The renewed ones stay queued, the skipped ones are gone.
	if got := p.Pending(); got != int(renewed) {
		t.Fatalf("%d pending, want the %d renewed", got, renewed)
	}
}

// RenewBatch agrees with Renew: a renewed record, a taken one, a newer
// pin's.
func TestRenewBatchConditional(t *testing.T) {
	p, clock, _ := asyncPins(t, 1000)
	ctx := context.Background()
	slots := p.Slots.(*PinSlots)
	now := clock.now().UnixMilli()
	for _, s := range []string{"a", "b", "c"} {
		if _, err := slots.Put(ctx, s, PinRecord{Slot: "session:" + s, Trigger: "r-" + s, ExpiresAtMs: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, ok, err := slots.Take(ctx, "b", ""); err != nil || !ok {
		t.Fatal("take b", err)
	}
	res := slots.RenewBatch(ctx, []SlotRenewal{{Session: "a", Trigger: "r-a", ExpiresAtMs: now + 1000},
		{Session: "b", Trigger: "r-b", ExpiresAtMs: now + 1000}, {Session: "c", Trigger: "r-old", ExpiresAtMs: now + 1000}})
	if !res[0].OK || res[1].OK || res[2].OK || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("results %+v, want a renewed, b gone, c another pin's", res)
	}
	r, _, ok, err := slots.Take(ctx, "a", "")
	if err != nil || !ok || r.ExpiresAtMs != now+1000 {
		t.Fatalf("a after renewal: %+v %v %v", r, ok, err)
	}

	// With the revision we wrote, nothing is read; a stale one loses.
	rec := PinRecord{Slot: "session:d", Trigger: "r-d", Tools: []string{"grep"}, CompletedAtMs: now, ExpiresAtMs: now}
	rev, err := slots.Put(ctx, "d", rec)
	if err != nil {
		t.Fatal(err)
	}
	q := SlotRenewal{Session: "d", Trigger: "r-d", ExpiresAtMs: now + 2000, Rev: rev, Record: rec}
	res = slots.RenewBatch(ctx, []SlotRenewal{q})
	if !res[0].OK || res[0].Rev <= rev {
		t.Fatalf("renewal by revision: %+v", res[0])
	}
	if again := slots.RenewBatch(ctx, []SlotRenewal{q}); again[0].OK || again[0].Err != nil {
		t.Fatalf("renewal with a stale revision: %+v, want refused", again[0])
	}
	q.Rev = res[0].Rev
	if _, _, ok, _ := slots.Take(ctx, "d", ""); !ok {
		t.Fatal("take d")
	}
	if after := slots.RenewBatch(ctx, []SlotRenewal{q}); after[0].OK || after[0].Err != nil {
		t.Fatalf("renewal after the next turn took the slot: %+v, want refused", after[0])
	}
	if r, _, ok, _ := slots.Take(ctx, "d", ""); ok {
		t.Fatalf("a renewal brought back a taken slot: %+v", r)
	}
}

// A capped slot bucket refuses new pins once full, and the error is
// recognised as "full".
func TestPinSlotsBucketCap(t *testing.T) {
	p, _, _ := asyncPins(t, 1000, WithMaxBytes(4096))
	ctx := context.Background()
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = p.Slots.Put(ctx, fmt.Sprintf("s-%d", i), PinRecord{Slot: "session", Trigger: fmt.Sprintf("r-%d", i)})
	}
	if err == nil || !isBucketFull(err) {
		t.Fatalf("1,000 puts into a 4 KiB bucket: %v, want a full-bucket error", err)
	}
}
