package index

import "math/bits"

// spread scrambles a table key so that structured keys (an engine may
// number its blocks 1, 2, 3...) still spread over the table: Fibonacci
// hashing, whose high bits depend on every key bit. It is a bijection.
func spread(key uint64) uint64 { return key * 0x9e3779b97f4a7c15 }

// homeSlot maps the high bits of a spread key onto [0, n) by
// multiply-shift, which needs no power-of-two size, so tables can grow by
// 1.5x and keep their load (and bytes per entry) in a narrow band.
func homeSlot(h uint64, n int) int {
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}

// Tables keep their load between 8/15 (just after a resize) and 4/5: 20
// to 30 bytes per 16-byte entry. Linear probing stays short at 4/5 since
// keys are well spread.
const (
	minTableSlots = 8
	shrinkDivisor = 5 // shrink when under 1/5 full
)

// tableFull reports whether a table of n slots holding used entries has
// no room for k more.
func tableFull(used, k, n int) bool { return (used+k)*5 > n*4 }

// slotsFor is the table size for need entries, at load 8/15.
func slotsFor(need int) int { return max(minTableSlots, need*15/8+1) }
