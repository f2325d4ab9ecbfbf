package actions_test

import (
	"testing"

	"github.com/hintstream/hintstream/actions"
)

func TestPriority(t *testing.T) {
	// 1 + floor(99 · log2(1 + t/1024) / log2(129)), log2(129) = 7.01123:
	for _, c := range []struct{ tokens, want int }{
		{-5, 1},         // clamped
		{0, 1},          // t <= 0
		{1, 1},          // log2(1.000977) = 0.001408; 99·0.001408/7.011 = 0.0199 → 1+0
		{1024, 15},      // log2(2) = 1; 99/7.011 = 14.12 → 1+14
		{4096, 33},      // log2(5) = 2.3219; 99·2.3219/7.011 = 32.79 → 1+32
		{16384, 58},     // log2(17) = 4.0875; 99·4.0875/7.011 = 57.72 → 1+57
		{65536, 86},     // log2(65) = 6.0224; 99·6.0224/7.011 = 85.04 → 1+85
		{131071, 99},    // log2(128.999) = 7.01122, just under log2(129): 98.99 → 1+98
		{131072, 100},   // log2(129)/log2(129) = 1; 1+99
		{10000000, 100}, // 1+floor(187.6) clamped to 100
	} {
		if got := actions.Priority(c.tokens); got != c.want {
			t.Errorf("Priority(%d) = %d, want %d", c.tokens, got, c.want)
		}
	}
}

// Priority is non-decreasing and concave. The continuous formula is
// concave; flooring it moves each value down by less than 1, so a second
// difference of the integer function can exceed the true one (<= 0) by
// less than 2, i.e. it is at most 1. That is the slack allowed here.
func TestPriorityMonotoneConcave(t *testing.T) {
	prev := actions.Priority(-1)
	for tok := 0; tok <= 300000; tok++ {
		p := actions.Priority(tok)
		if p < prev || p < 1 || p > 100 {
			t.Fatalf("Priority(%d) = %d after %d", tok, p, prev)
		}
		prev = p
	}
	const slack = 1
	for _, step := range []int{64, 256, 1024, 4096} {
		for tok := 0; tok+2*step <= 300000; tok += step {
			a, b, c := actions.Priority(tok), actions.Priority(tok+step), actions.Priority(tok+2*step)
			if d2 := a - 2*b + c; d2 > slack {
				t.Fatalf("step %d: second difference at %d = %d (%d, %d, %d) > %d", step, tok, d2, a, b, c, slack)
			}
		}
	}
	// Concave in substance, not only within the slack: the first 1K tokens
	// gain more priority than the last 1K before the top.
	if lo, hi := actions.Priority(1024)-actions.Priority(0), actions.Priority(131072)-actions.Priority(130048); lo <= hi {
		t.Fatalf("gain of the first 1K tokens %d <= gain of the last 1K %d", lo, hi)
	}
}
