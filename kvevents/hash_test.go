package kvevents

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"

	"github.com/zeebo/xxh3"
)

func vectorsDir(t testing.TB) string { t.Helper(); return testvectors.Dir(t) }

type hashVectors struct {
	BytesVector struct {
		Input string `json:"input_utf8"`
		Seed  uint64 `json:"seed"`
		Hash  string `json:"xxh3_64"`
	} `json:"bytes_vector"`
	Cases []struct {
		Name      string   `json:"name"`
		BlockSize int      `json:"block_size"`
		Tokens    []uint32 `json:"tokens"`
		Local     []string `json:"local_hashes"`
		Sequence  []string `json:"sequence_hashes"`
	} `json:"cases"`
}

func loadHashVectors(t testing.TB) hashVectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir(t), "dynamo_block_hashes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v hashVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no hash vector cases")
	}
	return v
}

func parseHashes(t testing.TB, ss []string) []uint64 {
	t.Helper()
	out := make([]uint64, len(ss))
	for i, s := range ss {
		u, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("hash %q: %v", s, err)
		}
		out[i] = u
	}
	return out
}

func TestBytesVector(t *testing.T) {
	v := loadHashVectors(t)
	want := parseHashes(t, []string{v.BytesVector.Hash})[0]
	if v.BytesVector.Seed != HashSeed {
		t.Fatalf("vector seed %d, HashSeed %d", v.BytesVector.Seed, HashSeed)
	}
	if got := xxh3.HashSeed([]byte(v.BytesVector.Input), HashSeed); got != want {
		t.Fatalf("xxh3_64(%q, %d) = %d, want %d", v.BytesVector.Input, HashSeed, got, want)
	}
}

func TestHashVectors(t *testing.T) {
	v := loadHashVectors(t)
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			wantLocal := parseHashes(t, c.Local)
			wantSeq := parseHashes(t, c.Sequence)
			local := LocalBlockHashes(c.Tokens, c.BlockSize)
			if !slices.Equal(local, wantLocal) {
				t.Errorf("LocalBlockHashes = %v, want %v", local, wantLocal)
			}
			if seq := SequenceHashes(wantLocal); !slices.Equal(seq, wantSeq) {
				t.Errorf("SequenceHashes = %v, want %v", seq, wantSeq)
			}
			if p := PromptHashes(c.Tokens, c.BlockSize); !slices.Equal(p, wantSeq) {
				t.Errorf("PromptHashes = %v, want %v", p, wantSeq)
			}
			for i := 1; i < len(wantSeq); i++ {
				if got := NextSequenceHash(wantSeq[i-1], wantLocal[i]); got != wantSeq[i] {
					t.Errorf("NextSequenceHash block %d = %d, want %d", i, got, wantSeq[i])
				}
			}
		})
	}
}

// Blocks over 64 tokens take the heap-buffer path; no vector covers it, so
// check it against the definition directly.
func TestLargeBlocks(t *testing.T) {
	const bs = 100
	tokens := make([]uint32, 3*bs+7)
	for i := range tokens {
		tokens[i] = uint32(i*7919 + 13)
	}
	var want []uint64
	for b := 0; b+bs <= len(tokens); b += bs {
		raw := make([]byte, 0, bs*4)
		for _, tok := range tokens[b : b+bs] {
			raw = binary.LittleEndian.AppendUint32(raw, tok)
		}
		want = append(want, xxh3.HashSeed(raw, HashSeed))
	}
	if got := LocalBlockHashes(tokens, bs); !slices.Equal(got, want) {
		t.Fatalf("LocalBlockHashes = %v, want %v", got, want)
	}
	if got := PromptHashes(tokens, bs); !slices.Equal(got, SequenceHashes(want)) {
		t.Fatalf("PromptHashes = %v, want %v", got, SequenceHashes(want))
	}
}

func TestHashEdgeCases(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4}
	for _, bs := range []int{0, -1} {
		if LocalBlockHashes(tokens, bs) != nil || PromptHashes(tokens, bs) != nil {
			t.Errorf("blockSize %d: want nil", bs)
		}
	}
	if got := PromptHashes(tokens, 5); len(got) != 0 {
		t.Errorf("partial block hashed: %v", got)
	}
	if got := LocalBlockHashes(tokens, 5); len(got) != 0 {
		t.Errorf("partial block hashed: %v", got)
	}
	if SequenceHashes(nil) != nil {
		t.Error("SequenceHashes(nil) != nil")
	}
}

func TestPromptHashesAllocs(t *testing.T) {
	tokens := make([]uint32, 2048*16)
	allocs := testing.AllocsPerRun(20, func() { _ = PromptHashes(tokens, 16) })
	if allocs > 1 {
		t.Fatalf("PromptHashes allocs = %v per call, want 1 (the result)", allocs)
	}
}

func BenchmarkPromptHashes(b *testing.B) {
	tokens := make([]uint32, 2048*16)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	b.SetBytes(int64(len(tokens) * 4))
	b.ReportAllocs()
	for b.Loop() {
		_ = PromptHashes(tokens, 16)
	}
}

// The byte-order-independent paths must agree with the fast ones (which
// little-endian machines take), block sizes over 64 tokens included.
func TestHashPortablePaths(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, bs := range []int{1, 16, 64, 65, 100} {
		tokens := make([]uint32, 5*bs+3)
		for i := range tokens {
			tokens[i] = r.Uint32()
		}
		n := len(tokens) / bs
		if got, want := localHashesPortable(make([]uint64, n), tokens, bs, HashSeed), LocalBlockHashes(tokens, bs); !slices.Equal(got, want) {
			t.Fatalf("block size %d: portable local = %v, want %v", bs, got, want)
		}
		seed := BlockSeed("adapter-a", "tenant-1")
		if got, want := localHashesPortable(make([]uint64, n), tokens, bs, seed), LocalBlockHashesSeeded(tokens, bs, seed); !slices.Equal(got, want) {
			t.Fatalf("block size %d: portable seeded local = %v, want %v", bs, got, want)
		}
		if got, want := promptHashesPortable(make([]uint64, n), tokens, bs), PromptHashes(tokens, bs); !slices.Equal(got, want) {
			t.Fatalf("block size %d: portable prompt = %v, want %v", bs, got, want)
		}
	}
}

func TestHashBlock16MatchesXXH3(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	block := make([]uint32, 16)
	raw := make([]byte, 64)
	for range 1000 {
		for i := range block {
			block[i] = r.Uint32()
			binary.LittleEndian.PutUint32(raw[4*i:], block[i])
		}
		if got, want := hashBlock16(block), xxh3.HashSeed(raw, HashSeed); got != want {
			t.Fatalf("hashBlock16(%v) = %d, want %d", block, got, want)
		}
	}
}
