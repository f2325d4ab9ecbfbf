package kvevents

import (
	"math/bits"
	"slices"

	"github.com/zeebo/xxh3"
)

// BlockSeed returns the XXH3 seed of a block's local hash when a request
// or engine event names the LoRA adapter loraName and the cache namespace
// cacheSalt, as today's Dynamo derives it:
//
//	seed = 1337 (+) XXH3-64(lora_name, seed 0) (+) XXH3-64(cache_salt, seed 1)
//
// where (+) is wrapping 64-bit addition and an empty string adds nothing,
// so BlockSeed("", "") is HashSeed. Only the block (local) hash takes this
// seed; sequence hashes always chain with HashSeed.
//
// Source: ai-dynamo/dynamo lib/kv-hashing/src/salt.rs compute_salt_hash
// (the version that starts from CHAIN_XXH3_SEED), called by
// lib/kv-router/src/protocols.rs block_hash_seed from
// compute_block_hash_for_seq (commit 038eab23a6b6e9b6391de6640f4f69d4c2726681).
func BlockSeed(loraName, cacheSalt string) uint64 {
	seed := uint64(HashSeed)
	if loraName != "" {
		seed += xxh3.HashString(loraName) // seed 0 is XXH3's default
	}
	if cacheSalt != "" {
		seed += xxh3.HashStringSeed(cacheSalt, 1)
	}
	return seed
}

// PromptHashesSeeded is PromptHashes with the block seed seed (see
// BlockSeed); seed HashSeed is exactly PromptHashes. The chain seed stays
// HashSeed. blockSize <= 0 returns nil.
func PromptHashesSeeded(tokens []uint32, blockSize int, seed uint64) []uint64 {
	if seed == HashSeed {
		return PromptHashes(tokens, blockSize)
	}
	local := LocalBlockHashesSeeded(tokens, blockSize, seed)
	for i := 1; i < len(local); i++ {
		local[i] = chainHash(local[i-1], local[i])
	}
	return local
}

// LocalBlockHashesSeeded is LocalBlockHashes with the block seed seed
// (see BlockSeed); LocalBlockHashes is seed HashSeed.
func LocalBlockHashesSeeded(tokens []uint32, blockSize int, seed uint64) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	return fillLocalHashes(make([]uint64, len(tokens)/blockSize), tokens, blockSize, seed)
}

// AppendPromptHashesSeeded appends PromptHashesSeeded(tokens, blockSize,
// seed) to dst and returns the extended slice: with room in dst it
// allocates nothing, so a caller choosing workers can reuse one buffer.
// blockSize <= 0, or a prompt shorter than one block, returns dst as is.
func AppendPromptHashesSeeded(dst []uint64, tokens []uint32, blockSize int, seed uint64) []uint64 {
	if blockSize <= 0 || len(tokens) < blockSize {
		return dst
	}
	n := len(tokens) / blockSize
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	if seed == HashSeed {
		fillPromptHashes(out, tokens, blockSize)
	} else {
		fillLocalHashes(out, tokens, blockSize, seed)
		for i := 1; i < n; i++ {
			out[i] = chainHash(out[i-1], out[i])
		}
	}
	return dst[:len(dst)+n]
}

// fillLocalHashes fills out, of len(tokens)/blockSize elements, with
// LocalBlockHashesSeeded(tokens, blockSize, seed).
func fillLocalHashes(out []uint64, tokens []uint32, blockSize int, seed uint64) []uint64 {
	n := len(out)
	switch {
	case blockSize == 16 && seed == HashSeed:
		for i := range out {
			out[i] = hashBlock16(tokens[i*16:]) // keys folded into constants
		}
	case blockSize == 16:
		for i := range out {
			out[i] = hashBlock16Seed(tokens[i*16:], seed)
		}
	case nativeLittleEndian && n > 0:
		raw := tokenBytes(tokens[:n*blockSize])
		w := blockSize * 4
		for i := range out {
			out[i] = xxh3.HashSeed(raw[i*w:(i+1)*w], seed)
		}
	default:
		return localHashesPortable(out, tokens, blockSize, seed)
	}
	return out
}

// hashBlock16Seed is hashBlock16 for any seed: XXH3-64 of 64 bytes adds
// the seed to, or subtracts it from, each secret word it uses.
func hashBlock16Seed(t []uint32, seed uint64) uint64 {
	t = t[:16:16]
	w := func(i int) uint64 { return uint64(t[2*i]) | uint64(t[2*i+1])<<32 }
	fold := func(x, y uint64) uint64 {
		hi, lo := bits.Mul64(x, y)
		return hi ^ lo
	}
	const s = HashSeed // the b16k* constants carry it; take it back out
	acc := uint64(block16Init)
	acc += fold(w(0)^(b16k0-s+seed), w(1)^(b16k1+s-seed))
	acc += fold(w(6)^(b16k2-s+seed), w(7)^(b16k3+s-seed))
	acc += fold(w(2)^(b16k4-s+seed), w(3)^(b16k5+s-seed))
	acc += fold(w(4)^(b16k6-s+seed), w(5)^(b16k7+s-seed))
	acc ^= acc >> 37
	acc *= 0x165667919e3779f9
	return acc ^ acc>>32
}
