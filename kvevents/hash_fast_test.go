package kvevents

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// xxh3Next is NextSequenceHash as Dynamo writes it: XXH3-64 of
// u64le(parent) || u64le(local), seed 1337.
func xxh3Next(parent, local uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], parent)
	binary.LittleEndian.PutUint64(b[8:], local)
	return xxh3.HashSeed(b[:], HashSeed)
}

func TestChainHashMatchesXXH3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		p, l := r.Uint64(), r.Uint64()
		if i < 4 {
			p, l = uint64(i), uint64(i)*0xffff // small and zero inputs
		}
		if got, want := chainHash(p, l), xxh3Next(p, l); got != want {
			t.Fatalf("chainHash(%d, %d) = %d, want %d", p, l, got, want)
		}
	}
}
