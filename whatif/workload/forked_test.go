package workload

import (
	"errors"
	"testing"
)

// TestGenerateForked: the forked workload has forks (two next turns of
// one turn), wake-ups that fall between another turn's wake-up and its
// request, no wake-up after its own request, and refuses a fork
// probability above 1.
func TestGenerateForked(t *testing.T) {
	w, err := GenerateForked(ForkedConfig{Seed: 1, Sessions: 10, Turns: 8})
	if err != nil {
		t.Fatal(err)
	}
	children := map[int]int{}
	for i := range w.Requests {
		r := &w.Requests[i]
		if r.Prev >= 0 {
			children[r.Prev]++
		}
		if r.HasWakeup && r.WakeupAt > r.At {
			t.Fatalf("request %d: wake-up at %v after the request at %v", i, r.WakeupAt, r.At)
		}
	}
	forks := 0
	for _, n := range children {
		if n > 1 {
			forks++
		}
	}
	if forks == 0 {
		t.Fatal("no turn forked")
	}
	again, err := GenerateForked(ForkedConfig{Seed: 1, Sessions: 10, Turns: 8})
	if err != nil || len(again.Requests) != len(w.Requests) || again.Requests[len(w.Requests)-1].At != w.Requests[len(w.Requests)-1].At {
		t.Fatalf("not deterministic: %v", err)
	}
	if _, err := GenerateForked(ForkedConfig{ForkProb: 1.5}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("fork probability 1.5: %v", err)
	}
	t.Logf("%d requests, %d forks", len(w.Requests), forks)
}
