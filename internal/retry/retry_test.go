package retry

import (
	"context"
	"testing"
	"time"
)

// TestDoublingIsJittered: the waits double up to the cap, each within
// ±50% of its step, and they are not all the same (no lockstep).
func TestDoublingIsJittered(t *testing.T) {
	const first, most = 100 * time.Millisecond, time.Second
	distinct := map[time.Duration]bool{}
	for range 20 {
		b := Doubling(first, most)
		step := first
		for i := range 8 {
			d := b.NextBackOff()
			if d < step/2 || d > step*3/2 {
				t.Fatalf("wait %d = %v, want within ±50%% of %v", i, d, step)
			}
			if i == 0 {
				distinct[d] = true
			}
			step = min(2*step, most)
		}
	}
	if len(distinct) < 2 {
		t.Fatalf("20 first waits all %v: no jitter", distinct)
	}
}

func TestWait(t *testing.T) {
	if !Wait(context.Background(), time.Millisecond) {
		t.Fatal("Wait of 1ms on a live context reported cancelled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Wait(ctx, time.Hour) || time.Since(start) > 10*time.Second {
		t.Fatal("Wait on a cancelled context did not return at once")
	}
}
