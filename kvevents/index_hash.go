package kvevents

import "math/bits"

// XXH3-64 of 16 bytes with seed HashSeed reduces to a few multiplies; the
// index chains every stored block, so it inlines them rather than calling
// NextSequenceHash (a test pins the two to each other).
const (
	chainLoKey = 0x6782737bea423ef2 // (secret[24:32] ^ secret[32:40]) + 1337
	chainHiKey = 0xaf56bc3b09964d01 // (secret[40:48] ^ secret[48:56]) - 1337
)

// chainHash equals NextSequenceHash(parent, local).
func chainHash(parent, local uint64) uint64 {
	lo := parent ^ chainLoKey
	hi := local ^ chainHiKey
	mh, ml := bits.Mul64(lo, hi)
	acc := 16 + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
	acc ^= acc >> 37
	acc *= 0x165667919e3779f9
	return acc ^ acc>>32
}

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

// XXH3-64 (seed HashSeed) of 64 bytes, a 16-token block, is four 128-bit
// multiplies. Its keys are XXH3's secret words plus or minus the seed.
const (
	block16Init = 0x8dde6c617af2a1c0 // 64 * PRIME64_1 mod 2^64
	b16k0       = 0xbe4ba423396cfeb8 + HashSeed
	b16k1       = 0x1cad21f72c81017c - HashSeed
	b16k2       = 0xdb979083e96dd4de + HashSeed
	b16k3       = 0x1f67b3b7a4a44072 - HashSeed
	b16k4       = 0x78e5c0cc4ee679cb + HashSeed
	b16k5       = 0x2172ffcc7dd05a82 - HashSeed
	b16k6       = 0x8e2443f7744608b8 + HashSeed
	b16k7       = 0x4c263a81e69035e0 - HashSeed
)

// hashBlock16 equals LocalBlockHashes of one 16-token block. Each 64-bit
// input word is two tokens, little-endian, so it is built arithmetically
// and works on any byte order.
func hashBlock16(t []uint32) uint64 {
	t = t[:16:16]
	w := func(i int) uint64 { return uint64(t[2*i]) | uint64(t[2*i+1])<<32 }
	fold := func(x, y uint64) uint64 {
		hi, lo := bits.Mul64(x, y)
		return hi ^ lo
	}
	acc := uint64(block16Init)
	acc += fold(w(0)^b16k0, w(1)^b16k1)
	acc += fold(w(6)^b16k2, w(7)^b16k3)
	acc += fold(w(2)^b16k4, w(3)^b16k5)
	acc += fold(w(4)^b16k6, w(5)^b16k7)
	acc ^= acc >> 37
	acc *= 0x165667919e3779f9
	return acc ^ acc>>32
}
