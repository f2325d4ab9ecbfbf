package kvevents

import (
	"encoding/binary"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// HashSeed is the XXH3 seed Dynamo's router uses for every block hash.
const HashSeed = 1337

// stackBlockTokens is the largest block whose token bytes are hashed from a
// stack buffer; larger blocks use one heap buffer per call, never per block.
const stackBlockTokens = 64

// LocalBlockHashes returns Dynamo's LocalBlockHash of each full block of
// tokens: XXH3-64 (seed 1337) of the block's tokens as u32 little-endian.
// A partial trailing block is not hashed. blockSize <= 0 returns nil.
func LocalBlockHashes(tokens []uint32, blockSize int) []uint64 {
	return LocalBlockHashesSeeded(tokens, blockSize, HashSeed)
}

// localHashesPortable fills out for LocalBlockHashesSeeded on any byte
// order.
func localHashesPortable(out []uint64, tokens []uint32, blockSize int, seed uint64) []uint64 {
	n := len(out)
	var stack [stackBlockTokens * 4]byte
	buf := blockBuffer(&stack, blockSize)
	for i := range n {
		out[i] = hashBlock(buf, tokens[i*blockSize:(i+1)*blockSize], seed)
	}
	return out
}

// tokenBytes is tokens' memory as bytes: on a little-endian machine,
// exactly the u32le encoding the hashes are defined over, so blocks need
// no copy.
func tokenBytes(tokens []uint32) []byte {
	if len(tokens) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), len(tokens)*4)
}

// SequenceHashes chains local hashes into Dynamo's sequence hashes:
// seq[0] = local[0], seq[i] = NextSequenceHash(seq[i-1], local[i]).
func SequenceHashes(local []uint64) []uint64 {
	if len(local) == 0 {
		return nil
	}
	out := make([]uint64, len(local))
	out[0] = local[0]
	for i := 1; i < len(local); i++ {
		out[i] = chainHash(out[i-1], local[i])
	}
	return out
}

// NextSequenceHash returns the sequence hash of a block whose parent has
// sequence hash parent and whose own tokens hash to local:
// XXH3-64(u64le(parent) || u64le(local), seed 1337).
func NextSequenceHash(parent, local uint64) uint64 {
	return chainHash(parent, local)
}

// PromptHashes returns the sequence hashes of a prompt's full blocks in one
// pass; it allocates only the result (and, on a big-endian machine with
// blocks over 64 tokens, one scratch buffer). blockSize <= 0 returns nil.
func PromptHashes(tokens []uint32, blockSize int) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	n := len(tokens) / blockSize
	if n == 0 {
		return nil
	}
	return fillPromptHashes(make([]uint64, n), tokens, blockSize)
}

// fillPromptHashes fills out, of len(tokens)/blockSize > 0 elements, with
// PromptHashes(tokens, blockSize).
func fillPromptHashes(out []uint64, tokens []uint32, blockSize int) []uint64 {
	n := len(out)
	if blockSize == 16 {
		// Dynamo's usual block size: hashing and chaining fully inlined.
		seq := hashBlock16(tokens)
		out[0] = seq
		for i := 1; i < n; i++ {
			seq = chainHash(seq, hashBlock16(tokens[i*16:]))
			out[i] = seq
		}
		return out
	}
	if nativeLittleEndian {
		raw := tokenBytes(tokens[:n*blockSize])
		w := blockSize * 4
		seq := xxh3.HashSeed(raw[:w], HashSeed)
		out[0] = seq
		for i := 1; i < n; i++ {
			seq = chainHash(seq, xxh3.HashSeed(raw[i*w:(i+1)*w], HashSeed))
			out[i] = seq
		}
		return out
	}
	return promptHashesPortable(out, tokens, blockSize)
}

// promptHashesPortable fills out for PromptHashes on any byte order.
func promptHashesPortable(out []uint64, tokens []uint32, blockSize int) []uint64 {
	n := len(out)
	var stack [stackBlockTokens * 4]byte
	buf := blockBuffer(&stack, blockSize)
	var seq uint64
	for i := range n {
		local := hashBlock(buf, tokens[i*blockSize:(i+1)*blockSize], HashSeed)
		if i == 0 {
			seq = local
		} else {
			seq = chainHash(seq, local)
		}
		out[i] = seq
	}
	return out
}

func blockBuffer(stack *[stackBlockTokens * 4]byte, blockSize int) []byte {
	if blockSize <= stackBlockTokens {
		return stack[:blockSize*4]
	}
	return make([]byte, blockSize*4)
}

// hashBlock hashes block with seed through buf, which holds exactly
// len(block)*4 bytes.
func hashBlock(buf []byte, block []uint32, seed uint64) uint64 {
	for j, t := range block {
		binary.LittleEndian.PutUint32(buf[j*4:], t)
	}
	return xxh3.HashSeed(buf, seed)
}
