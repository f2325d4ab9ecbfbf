package actions

import "math"

// priorityFullTokens is the miss size that earns the top priority.
const priorityFullTokens = 131072

// Priority maps the tokens a cache miss would recompute to a pin priority
// in 1..100:
//
//	Priority(t) = 1 + floor(99 · log2(1 + t/1024) / log2(1 + 131072/1024))
//
// clamped to [1, 100]: 1 for t <= 0 and 100 from 128K tokens on. It is
// non-decreasing, and concave (up to integer rounding): recompute cost
// grows at least linearly with the prefix, but a store under pressure
// should still spread its memory over many conversations rather than let
// a few long ones crowd out the rest, and a log scale separates 1K from
// 4K tokens as clearly as 32K from 128K.
func Priority(tokens int) int {
	if tokens <= 0 {
		return 1
	}
	if tokens >= priorityFullTokens {
		// Exact, whatever the float rounding of the formula at its end.
		return 100
	}
	f := 99 * math.Log2(1+float64(tokens)/1024) / math.Log2(1+priorityFullTokens/1024)
	return min(max(1+int(f), 1), 100)
}
