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
