package workload

import (
	"testing"
	"time"
)

func TestWakeFirstTurns(t *testing.T) {
	w, err := Generate(SyntheticConfig{Seed: 3, Sessions: 5})
	if err != nil {
		t.Fatal(err)
	}
	before := w.Stats()
	if n := w.WakeFirstTurns(time.Second); n != before.Sessions {
		t.Fatalf("added %d wake-ups for %d sessions", n, before.Sessions)
	}
	after := w.Stats()
	if after.Wakeups != before.Wakeups+before.Sessions {
		t.Fatalf("wake-ups %d, want %d", after.Wakeups, before.Wakeups+before.Sessions)
	}
	seen := map[int]bool{}
	for k, ev := range w.Events {
		if k > 0 && ev.At < w.Events[k-1].At {
			t.Fatalf("events out of order at %d", k)
		}
		r := w.Requests[ev.Request]
		switch ev.Kind {
		case KindWakeup:
			seen[ev.Request] = true
			if ev.At > r.At || ev.At < r.At-time.Second {
				t.Fatalf("wake-up of %d at %v, request at %v", ev.Request, ev.At, r.At)
			}
		case KindRequest:
			if !seen[ev.Request] {
				t.Fatalf("request %d before its wake-up", ev.Request)
			}
		}
	}
	if w.WakeFirstTurns(time.Second) != 0 {
		t.Fatal("a second call added wake-ups again")
	}
}
