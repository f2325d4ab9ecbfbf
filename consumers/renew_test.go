package consumers

import (
	"github.com/hintstream/hintstream/internal/metricstest"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// TestPinRenewedUntilNextTurnOrCap: with nothing observed, a pin lasts
// 50 s (30 s expected × 1.5 + 5 s). Session s never comes back: an event
// stamped past half its TTL renews it, for what is left of RenewMax
// (60 s) when that is shorter, and so on until RenewMax has passed.
// Session t comes back: its next turn releases the slot and its pin is
// never renewed.
func TestPinRenewedUntilNextTurnOrCap(t *testing.T) {
	f := setupPins(t, workerMap{2: {WorkerID: 2, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:1"},
		ObjectLayout: layout16()}}, func(p *pins.Pinning) { p.RenewMax = time.Minute })
	prompt := make([]uint32, 32)
	t0 := time.Now().Truncate(time.Millisecond)
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	wantPin := func(what, slot string, ttlMs int64) {
		t.Helper()
		select {
		case p := <-f.pins:
			if p.Slot != slot || p.TTLMs != ttlMs || (ttlMs > 0 && len(p.Keys) != 4) {
				t.Fatalf("%s: pin %+v, want slot %s ttl %d ms", what, p, slot, ttlMs)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no pin", what)
		}
	}
	// noPin checks the renewals queued so far (counted before the
	// triggering event is acked, so final once it settled), and that no
	// other pin has arrived.
	noPin := func(what string, renewals uint64) {
		t.Helper()
		if got := f.counters.HintsRenewQueued.Value(); got != renewals {
			t.Fatalf("%s: %d renewals queued, want %d", what, got, renewals)
		}
		select {
		case p := <-f.pins:
			t.Fatalf("%s: unexpected pin %+v", what, p)
		default:
		}
	}
	// tick publishes another session's request stamped t0+d, and waits
	// for it to be handled.
	n := 0
	tick := func(d time.Duration) {
		t.Helper()
		n++
		f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "other-" + time.Duration(n).String(),
			SessionID: "other", TokenIDs: prompt, ReceivedAtMs: at(d)})
		f.settled(t, "LLM_REQUESTS", "hintstream-requests")
	}

	for _, s := range []string{"s", "t"} {
		f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: s + "1", SessionID: s, TokenIDs: prompt,
			ReceivedAtMs: at(0)})
		f.settled(t, "LLM_REQUESTS", "hintstream-requests")
		f.pub(t, streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: s + "1", SessionID: s, WorkerID: 2,
			ToolCalls: []schemas.ToolCall{{Name: "grep"}}, CompletedAtMs: at(0)})
		wantPin("first pin of "+s, "session:"+s, 50000)
		f.settled(t, "LLM_RESPONSES", "hintstream-responses")
	}
	tick(20 * time.Second)
	noPin("before half the TTL", 0)
	// t's next turn, at 24 s: released, and a tool time observed.
	f.pub(t, streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "t2", SessionID: "t", TokenIDs: prompt,
		ReceivedAtMs: at(24 * time.Second)})
	wantPin("release of t", "session:t", 0)
	f.settled(t, "LLM_REQUESTS", "hintstream-requests")

	// At 26 s, s is renewed: the expected time is now max(30 s, 24 s),
	// so 50 s, but only 34 s of RenewMax are left.
	tick(26 * time.Second)
	wantPin("first renewal of s", "session:s", 34000)
	noPin("renewal of t, which came back", 1)
	// Due again at 26 + 17 = 43 s: 16 s left at 44 s.
	tick(42 * time.Second)
	noPin("before half the renewed TTL", 1)
	tick(44 * time.Second)
	wantPin("second renewal of s", "session:s", 16000)
	// Due at 52 s; at 61 s RenewMax has passed: no more.
	tick(61 * time.Second)
	noPin("renewal past RenewMax", 2)
	for name, want := range map[string]uint64{
		"hintstream_hints_pin_queued_total": 2, "hintstream_hints_release_queued_total": 1, "hintstream_hints_renew_queued_total": 2, "hintstream_pins_renewal_ended_total": 1,
	} {
		if got := metricstest.Get(f.counters, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
