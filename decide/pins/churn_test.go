package pins

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/nats-io/nats.go/jetstream"
)

// churn writes sessions/s new pins (each expiring after pinTTL) for d;
// every other session's next turn takes its slot, the rest are
// abandoned. It returns the bucket's bytes at half time and at the end.
// It returns its error rather than failing t: the test churns both
// buckets at once (each run is d of wall time, and the two are apart).
func churn(js jetstream.JetStream, slots *PinSlots, bucket string, rate int, pinTTL, d time.Duration) (mid, end uint64, err error) {
	ctx := context.Background()
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return 0, 0, err
	}
	bytes := func() (uint64, error) {
		info, err := st.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.Bytes, nil
	}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; time.Since(start) < d; i++ {
		<-tick.C
		s := fmt.Sprintf("s-%d", i)
		if _, err := slots.Put(ctx, s, PinRecord{Slot: "session:" + s, Trigger: "r-" + s, Tools: []string{"search"},
			CompletedAtMs: time.Now().UnixMilli(), ExpiresAtMs: time.Now().Add(pinTTL).UnixMilli()}); err != nil {
			return 0, 0, fmt.Errorf("%s: put: %w", bucket, err)
		}
		if i%2 == 1 {
			if _, _, ok, err := slots.Take(ctx, fmt.Sprintf("s-%d", i-1), ""); err != nil || !ok {
				return 0, 0, fmt.Errorf("%s: take: %v %v", bucket, ok, err)
			}
		}
		if mid == 0 && time.Since(start) >= d/2 {
			if mid, err = bytes(); err != nil {
				return 0, 0, err
			}
		}
	}
	end, err = bytes()
	return mid, end, err
}

// TestPinSlotsFlatUnderChurn (issue 26, finding 6): under steady churn,
// half the sessions coming back and half abandoned, the slot bucket
// stops growing once records and markers leave on their schedule (pin
// TTL + linger, marker TTL); a bucket without per-message TTLs (as
// before) keeps every record and marker and grows all along.
func TestPinSlotsFlatUnderChurn(t *testing.T) {
	const rate = 100
	pinTTL, d := time.Second, 8*time.Second
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	flat, err := OpenPinSlots(ctx, js, "flat", WithSlotLinger(time.Second), WithSlotMarkerTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !flat.msgTTL {
		t.Fatal("a new slot bucket without per-message TTLs")
	}
	// The bucket as created before: 24 h, no per-message TTLs.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "old", History: 1, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	old, err := OpenPinSlots(ctx, js, "old", WithBucketLogger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	var oMid, oEnd uint64
	var oErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		oMid, oEnd, oErr = churn(js, old, "old", rate, pinTTL, d)
	}()
	fMid, fEnd, fErr := churn(js, flat, "flat", rate, pinTTL, d)
	<-done
	if err := errors.Join(fErr, oErr); err != nil {
		t.Fatal(err)
	}
	t.Logf("slot bucket bytes at %v and %v of %d sessions/s: with TTLs %d -> %d; without %d -> %d",
		d/2, d, rate, fMid, fEnd, oMid, oEnd)
	// Each record lives pin TTL + linger (2 s) and each marker 1 s (the
	// server's expiry runs about once a second): at 100/s well under
	// 6 s of sessions, whatever the run's length.
	perSession := oEnd / uint64(rate*int(d/time.Second))
	if bound := 6 * rate * perSession; fEnd > bound {
		t.Fatalf("bucket with TTLs holds %d bytes after %v, over the bound %d", fEnd, d, bound)
	}
	if fEnd > fMid*3/2 {
		t.Fatalf("bucket with TTLs grew from %d to %d bytes in the second half: not flat", fMid, fEnd)
	}
	if oEnd < oMid*3/2 {
		t.Fatalf("the old bucket grew only from %d to %d bytes: the test does not tell", oMid, oEnd)
	}
	// Updating an old bucket turns the TTLs on.
	upd, err := OpenPinSlots(ctx, js, "old", WithUpdateBucket(true), WithBucketLogger(discard()))
	if err != nil || !upd.msgTTL {
		t.Fatalf("update of an old bucket: %v, msgTTL %v", err, upd != nil && upd.msgTTL)
	}
}

// TestRenewalBudgetBuysLikelyReturns (issue 26, finding 6): with more
// renewals due than the budget allows, it renews the sessions most
// likely to come back (recent tool calls, tools whose sessions return)
// before those long past their expected time.
func TestRenewalBudgetBuysLikelyReturns(t *testing.T) {
	const rate, each = 10, 20
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	slots, err := OpenPinSlots(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	ep, got := pinSink(t)
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
		TTL: actions.DefaultTTLConfig(), Sender: pool, RenewMax: 24 * time.Hour, RenewRate: rate,
		Counters: metrics.New(), Log: discard(), Now: clock.now}
	// "fetch" sessions have come back 9 times in 10; "crawl" ones 1 in 10
	// (both tools tracked by the learner, as tools seen returning are).
	for _, tool := range []string{"fetch", "crawl"} {
		if !p.Learner.Observe(tool, 30*time.Second) {
			t.Fatal("observation discarded")
		}
	}
	for range 9 {
		p.returns.observe(p.Learner, []string{"fetch"}, true)
		p.returns.observe(p.Learner, []string{"crawl"}, false)
	}
	p.returns.observe(p.Learner, []string{"fetch"}, false)
	p.returns.observe(p.Learner, []string{"crawl"}, true)
	ctx := context.Background()
	now := clock.now()
	ttl := time.Minute
	queue := func(name string, tools []string, completed time.Time) {
		pin := actions.Pin{Trigger: "r-" + name, Slot: "session:" + name, Keys: []string{"k"}, TTL: ttl, Priority: 1}
		rev, err := slots.Put(ctx, name, PinRecord{Slot: pin.Slot, Trigger: pin.Trigger, Tools: tools,
			CompletedAtMs: completed.UnixMilli(), ExpiresAtMs: now.Add(ttl).UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		pin.Revision = rev
		p.schedule(name, pin, tools, completed, ttl, rev)
	}
	for i := range each {
		queue(fmt.Sprintf("old-%d", i), []string{"fetch"}, now.Add(-time.Hour)) // an hour into a 30 s tool
		queue(fmt.Sprintf("crawl-%d", i), []string{"crawl"}, now)               // fresh, rarely returns
		queue(fmt.Sprintf("young-%d", i), []string{"fetch"}, now)               // fresh, usually returns
	}
	rctx, cancel := context.WithCancel(ctx)
	done := p.RunRenewals(rctx)
	t.Cleanup(func() { cancel(); <-done })
	clock.add(ttl / 2) // every one due at once
	p.Tick(ctx, clock.now())
	// The budget's first each renewals are the young sessions'.
	for i := range each {
		select {
		case pl := <-got:
			if len(pl.Slot) < 14 || pl.Slot[:14] != "session:young-" {
				t.Fatalf("renewal %d went to %s before every young session was renewed", i, pl.Slot)
			}
			if pl.Revision == 0 {
				t.Fatalf("renewal of %s without a revision", pl.Slot)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d renewals within 10s", i)
		}
	}
	// Then the fresh crawls, before the stale fetches.
	select {
	case pl := <-got:
		if pl.Slot[:14] != "session:crawl-" {
			t.Fatalf("after the young sessions, %s", pl.Slot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal after the young sessions")
	}
}

// TestSimToolTimeSaturates (issue 26, finding 6): an announced tool
// time of 9,223,372,036,855 ms or more gives the 24 h cap, not a wrapped
// duration.
func TestSimToolTimeSaturates(t *testing.T) {
	for _, ms := range []int64{9_223_372_036_855, 9_223_372_036_854_775_807, maxToolMs, maxToolMs + 1} {
		if d := toolDuration(ms); d != actions.MaxPinTTL {
			t.Fatalf("tool time %d ms gives %v, want %v", ms, d, actions.MaxPinTTL)
		}
		if ttl := actions.DefaultTTLConfig().TTL(toolDuration(ms)); ttl != actions.MaxPinTTL {
			t.Fatalf("tool time %d ms gives a %v pin, want %v", ms, ttl, actions.MaxPinTTL)
		}
	}
	if d := toolDuration(-5); d != 0 {
		t.Fatalf("negative tool time gives %v", d)
	}
}
