package tooltime

import (
	"testing"
	"time"
)

func TestRemainingIsTheMeanResidualOfTheWindow(t *testing.T) {
	l := New(Config{MinSamples: 5})
	if got := l.Remaining([]string{"fetch"}, 10*time.Second); got != DefaultDefault-10*time.Second {
		t.Fatalf("nothing observed: %v, want the default less the time run", got)
	}
	if got := l.Remaining(nil, 2*DefaultDefault); got != 0 {
		t.Fatalf("past the default: %v, want 0", got)
	}
	for s := 1; s <= 10; s++ {
		l.Observe("fetch", time.Duration(s)*time.Second)
	}
	for _, c := range []struct {
		elapsed, want time.Duration
	}{
		{0, 5500 * time.Millisecond},       // the mean of 1..10 s
		{5 * time.Second, 3 * time.Second}, // 6..10 s, less 5 s
		{9500 * time.Millisecond, 500 * time.Millisecond},
		{10 * time.Second, DefaultMaxGap}, // longer than every gap seen
	} {
		if got := l.Remaining([]string{"fetch"}, c.elapsed); got != c.want {
			t.Errorf("fetch after %v: %v, want %v", c.elapsed, got, c.want)
		}
	}
	// A tool with too few gaps of its own takes the any-tool window; a
	// call of several tools waits for the slowest.
	for range 4 {
		l.Observe("build", time.Minute)
	}
	if got := l.Remaining([]string{"build"}, 0); got != (10*5500*time.Millisecond+4*time.Minute)/14 {
		t.Errorf("build, 4 gaps: %v, want the any-tool window's mean", got)
	}
	l.Observe("build", time.Minute)
	if got := l.Remaining([]string{"fetch", "build"}, 8*time.Second); got != 52*time.Second {
		t.Errorf("fetch and build after 8 s: %v, want build's 52 s", got)
	}
}
