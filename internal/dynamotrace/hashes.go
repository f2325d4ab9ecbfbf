package dynamotrace

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// seed is Dynamo's XXH3_SEED (lib/kv-router/src/protocols.rs).
const seed = 1337

// Hashes returns input_sequence_hashes of a prompt at blockSize, as
// Dynamo's replay.rs@0366e63a input_sequence_hashes computes them: the
// local hash of each full block (XXH3-64 of its tokens as u32
// little-endian, seed 1337), then that of the partial tail when the
// prompt does not fill its last block (compute_hash_v2, the same hash of
// fewer tokens), chained into sequence hashes (compute_seq_hash_for_block:
// seq[0] = local[0], seq[i] = XXH3-64(u64le(seq[i-1]) || u64le(local[i]),
// seed 1337)).
func Hashes(tokens []uint32, blockSize int) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	var locals []uint64
	for start := 0; start < len(tokens); start += blockSize {
		end := min(start+blockSize, len(tokens))
		buf := make([]byte, 4*(end-start))
		for i, t := range tokens[start:end] {
			binary.LittleEndian.PutUint32(buf[4*i:], t)
		}
		locals = append(locals, xxh3.HashSeed(buf, seed))
	}
	seq := make([]uint64, len(locals))
	var pair [16]byte
	for i, l := range locals {
		if i == 0 {
			seq[0] = l
			continue
		}
		binary.LittleEndian.PutUint64(pair[:8], seq[i-1])
		binary.LittleEndian.PutUint64(pair[8:], l)
		seq[i] = xxh3.HashSeed(pair[:], seed)
	}
	return seq
}
