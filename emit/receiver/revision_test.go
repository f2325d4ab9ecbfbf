package receiver

import (
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
)

// outOfOrder is the finding's sequence as a master sees it when a
// session's release (revision 10) and its next pin (revision 11) cross
// on the way: the pin first, then the release, then a renewal of the
// old pin (revision 9) that was still in flight, then the new pin's
// renewal (12), and a sender that does not order (revision 0).
func outOfOrder(t *testing.T) []actions.Hint {
	t.Helper()
	return []actions.Hint{
		pinHint(t, actions.Pin{Trigger: "turn-2", Slot: "session:s", Keys: []string{"new"}, TTL: 30 * time.Second, Priority: 50, Revision: 11}),
		pinHint(t, actions.Pin{Trigger: "turn-1", Slot: "session:s", Revision: 10}),
		pinHint(t, actions.Pin{Trigger: "turn-1/renew-1", Slot: "session:s", Keys: []string{"old"}, TTL: 30 * time.Second, Priority: 50, Revision: 9}),
		pinHint(t, actions.Pin{Trigger: "turn-2/renew-1", Slot: "session:s", Keys: []string{"new"}, TTL: 40 * time.Second, Priority: 50, Revision: 12}),
		pinHint(t, actions.Pin{Trigger: "legacy", Slot: "session:l", Keys: []string{"l"}, TTL: time.Second, Priority: 1}),
		pinHint(t, actions.Pin{Trigger: "legacy2", Slot: "session:l", Keys: []string{"l"}, TTL: time.Second, Priority: 1}),
	}
}

// TestPinRevisionsInOrder: the Go receiver applies only revisions above
// the slot's last, so the new pin survives the release and the old
// renewal that overtook it; revision 0 is applied as before.
func TestPinRevisionsInOrder(t *testing.T) {
	r, c := serve(t)
	pool := sendPool(t)
	for _, h := range outOfOrder(t) {
		if err := pool.Send(r.Endpoint(), h); err != nil {
			t.Fatal(err)
		}
	}
	// Received counts a message before the handler has it: wait until
	// each of the six was either handed over or dropped as stale.
	natstest.Eventually(t, 10*time.Second, func() bool {
		return r.Counters().Received.Value() == 6 && uint64(len(c.hints()))+r.Counters().Stale.Value() == 6
	}, "6 messages handled or dropped")
	var applied []uint64
	final := map[string]int64{}
	for _, h := range c.hints() {
		applied = append(applied, h.Pin.Revision)
		final[h.Pin.Slot] = h.Pin.TTLMs
	}
	if want := []uint64{11, 12, 0, 0}; len(applied) != len(want) || applied[0] != 11 || applied[1] != 12 {
		t.Fatalf("applied revisions %v, want %v", applied, want)
	}
	if final["session:s"] != 40000 {
		t.Fatalf("slot ends with ttl_ms %d, want the new pin's renewal (40000): the release or old renewal was applied", final["session:s"])
	}
	if got := r.Counters().Stale.Value(); got != 2 {
		t.Fatalf("stale %d, want 2", got)
	}
}

// The window forgets the least recently applied slot first.
func TestSlotRevisionsWindow(t *testing.T) {
	s := newSlotRevisions(2)
	if !s.apply("a", 5) || s.apply("a", 5) || s.apply("a", 4) || !s.apply("b", 1) || !s.apply("a", 6) {
		t.Fatal("revision rule")
	}
	if !s.apply("c", 1) { // evicts b, the least recently applied
		t.Fatal("new slot")
	}
	if !s.apply("b", 1) || s.apply("c", 1) {
		t.Fatal("b should be forgotten, c remembered")
	}
	if _, err := New("tcp://127.0.0.1:*", nil, WithSlotWindow(0)); err == nil {
		t.Fatal("slot window 0 accepted")
	}
}

// TestPythonReceiverPinRevisions: the Python receiver follows the same
// rule on the same messages.
func TestPythonReceiverPinRevisions(t *testing.T) {
	py := startPyReceiver(t)
	pool := sendPool(t)
	for _, h := range outOfOrder(t) {
		if err := pool.Send(py.ep, h); err != nil {
			t.Fatal(err)
		}
	}
	var revs []float64
	for range 4 {
		pl := py.next(t)["payload"].(map[string]any)
		rev, _ := pl["revision"].(float64)
		revs = append(revs, rev)
		if pl["slot"] == "session:s" && rev == 10 {
			t.Fatal("the overtaken release was applied")
		}
	}
	if revs[0] != 11 || revs[1] != 12 || revs[2] != 0 || revs[3] != 0 {
		t.Fatalf("applied revisions %v, want [11 12 0 0]", revs)
	}
	_ = py.stdin.Close()
	c := py.next(t)["counters"].(map[string]any)
	if c["stale"] != 2.0 || c["delivered|kv.pin"] != 4.0 {
		t.Fatalf("python counters %v, want stale 2, delivered 4", c)
	}
}
