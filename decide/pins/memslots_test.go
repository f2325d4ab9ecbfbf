package pins

import (
	"context"
	"testing"
)

// TestMemSlotsPrune drops the records of pins expired before the given
// time only, and a pruned session is neither renewed nor taken.
func TestMemSlotsPrune(t *testing.T) {
	ctx := context.Background()
	m := NewMemSlots()
	for s, exp := range map[string]int64{"old": 100, "edge": 200, "new": 300} {
		if _, err := m.Put(ctx, s, PinRecord{Trigger: "t-" + s, ExpiresAtMs: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Prune(200); n != 1 || m.Len() != 2 {
		t.Fatalf("pruned %d, left %d; want 1 and 2", n, m.Len())
	}
	if _, ok, _ := m.Renew(ctx, "old", "t-old", 500); ok {
		t.Fatal("a pruned session was renewed")
	}
	if _, _, ok, _ := m.Take(ctx, "old", ""); ok {
		t.Fatal("a pruned session was taken")
	}
	if _, _, ok, _ := m.Take(ctx, "edge", ""); !ok {
		t.Fatal("a pin expiring at the prune time was dropped")
	}
}
