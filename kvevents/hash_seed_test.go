package kvevents

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/zeebo/xxh3"
)

// saltedVectors is shared/vectors/dynamo_block_hashes_salted.json, made
// with the Python xxhash package apart from this code.
type saltedVectors struct {
	Tokens []uint32 `json:"tokens"`
	Cases  []struct {
		LoraName  *string  `json:"lora_name"`
		CacheSalt *string  `json:"cache_salt"`
		BlockSize int      `json:"block_size"`
		BlockSeed string   `json:"block_seed"`
		Local     []string `json:"local_hashes"`
		Sequence  []string `json:"sequence_hashes"`
	} `json:"cases"`
}

func TestSaltedHashVectors(t *testing.T) {
	var v saltedVectors
	if err := json.Unmarshal(testvectors.Read(t, "dynamo_block_hashes_salted.json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 10 {
		t.Fatalf("only %d cases", len(v.Cases))
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, c := range v.Cases {
		lora, salt := deref(c.LoraName), deref(c.CacheSalt)
		t.Run(fmt.Sprintf("lora=%q/salt=%q/bs=%d", lora, salt, c.BlockSize), func(t *testing.T) {
			wantSeed, err := strconv.ParseUint(c.BlockSeed, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			seed := BlockSeed(lora, salt)
			if seed != wantSeed {
				t.Fatalf("BlockSeed = %d, want %d", seed, wantSeed)
			}
			wantLocal, wantSeq := parseHashes(t, c.Local), parseHashes(t, c.Sequence)
			if got := LocalBlockHashesSeeded(v.Tokens, c.BlockSize, seed); !slices.Equal(got, wantLocal) {
				t.Errorf("LocalBlockHashesSeeded = %v, want %v", got, wantLocal)
			}
			if got := PromptHashesSeeded(v.Tokens, c.BlockSize, seed); !slices.Equal(got, wantSeq) {
				t.Errorf("PromptHashesSeeded = %v, want %v", got, wantSeq)
			}
			// The chain seed stays 1337 whatever the block seed.
			if got := SequenceHashes(wantLocal); !slices.Equal(got, wantSeq) {
				t.Errorf("SequenceHashes = %v, want %v", got, wantSeq)
			}
		})
	}
}

// TestSeededHashPaths holds the 16-token arithmetic path and the
// generic paths to XXH3 itself for random seeds and block sizes.
func TestSeededHashPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for range 200 {
		seed := r.Uint64()
		bs := []int{1, 3, 16, 32, 64, 65, 100}[r.IntN(7)]
		tokens := make([]uint32, bs*(1+r.IntN(4))+r.IntN(bs))
		for i := range tokens {
			tokens[i] = r.Uint32()
		}
		got := LocalBlockHashesSeeded(tokens, bs, seed)
		if len(got) != len(tokens)/bs {
			t.Fatalf("bs %d: %d hashes for %d tokens", bs, len(got), len(tokens))
		}
		for i, h := range got {
			buf := make([]byte, 0, bs*4)
			for _, tok := range tokens[i*bs : (i+1)*bs] {
				buf = append(buf, byte(tok), byte(tok>>8), byte(tok>>16), byte(tok>>24))
			}
			if want := xxh3.HashSeed(buf, seed); h != want {
				t.Fatalf("bs %d seed %d block %d: %d, want %d", bs, seed, i, h, want)
			}
		}
	}
	if got, want := BlockSeed("", ""), uint64(HashSeed); got != want {
		t.Fatalf("BlockSeed of nothing = %d, want %d", got, want)
	}
	tokens := make([]uint32, 64)
	if !slices.Equal(PromptHashesSeeded(tokens, 16, HashSeed), PromptHashes(tokens, 16)) {
		t.Fatal("seed 1337 differs from PromptHashes")
	}
}
