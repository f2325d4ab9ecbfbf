package kvevents

import (
	"slices"
	"testing"
)

// TestAppendPromptHashesSeeded holds the reusing form to PromptHashesSeeded
// for every path (block size 16 inlined, other sizes, seeded or not,
// partial trailing blocks) and checks it keeps dst's prefix and reuses
// its room.
func TestAppendPromptHashesSeeded(t *testing.T) {
	tokens := make([]uint32, 1000)
	for i := range tokens {
		tokens[i] = uint32(i*2654435761) ^ 0x5bd1e995
	}
	seeds := []uint64{HashSeed, BlockSeed("lora-a", ""), BlockSeed("", "salt"), BlockSeed("x", "y")}
	for _, bs := range []int{0, -1, 1, 3, 16, 32, 64, 65, 100, 2000} {
		for _, seed := range seeds {
			for _, n := range []int{0, 15, 16, 17, 999, 1000} {
				want := PromptHashesSeeded(tokens[:n], bs, seed)
				prefix := []uint64{7, 8}
				got := AppendPromptHashesSeeded(slices.Clone(prefix), tokens[:n], bs, seed)
				if !slices.Equal(got[:2], prefix) || !slices.Equal(got[2:], want) {
					t.Fatalf("bs %d seed %x n %d: got %v, want %v after %v", bs, seed, n, got, want, prefix)
				}
				buf := make([]uint64, 0, 1000)
				got = AppendPromptHashesSeeded(buf, tokens[:n], bs, seed)
				if !slices.Equal(got, want) || (len(got) > 0 && &got[0] != &buf[:1][0]) {
					t.Fatalf("bs %d seed %x n %d: reused buffer gave %v (want %v) or was not reused", bs, seed, n, got, want)
				}
			}
		}
	}
}
