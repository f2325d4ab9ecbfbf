package index

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// sequenceVectors reads the cases of both hash vector files (made with
// Python's xxhash apart from this code): tokens, block size, Dynamo's
// local and sequence hashes.
type sequenceVector struct {
	name      string
	tokens    []uint32
	blockSize int
	local     []uint64
	seq       []uint64
}

func loadSequenceVectors(t *testing.T) []sequenceVector {
	t.Helper()
	parse := func(ss []string) []uint64 {
		out := make([]uint64, len(ss))
		for i, s := range ss {
			u, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = u
		}
		return out
	}
	type vcase struct {
		Name      string   `json:"name"`
		Tokens    []uint32 `json:"tokens"`
		BlockSize int      `json:"block_size"`
		Local     []string `json:"local_hashes"`
		Sequence  []string `json:"sequence_hashes"`
		BlockSeed string   `json:"block_seed"`
	}
	var out []sequenceVector
	for _, f := range []string{"dynamo_block_hashes.json", "dynamo_block_hashes_salted.json"} {
		b, err := os.ReadFile(filepath.Join(testvectors.Dir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Tokens []uint32 `json:"tokens"`
			Cases  []vcase  `json:"cases"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for i, c := range v.Cases {
			tokens := c.Tokens
			if tokens == nil {
				tokens = v.Tokens
			}
			out = append(out, sequenceVector{name: fmt.Sprintf("%s/%d%s", f, i, c.Name), tokens: tokens,
				blockSize: c.BlockSize, local: parse(c.Local), seq: parse(c.Sequence)})
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d vector cases, want both files' (16)", len(out))
	}
	return out
}

// routerEventJSON is a stored event as Dynamo's KV publisher writes it
// (RouterEvent JSON): blocks [from, to) of local, block i's engine hash
// ext+i, chained to block from-1.
func routerEventJSON(worker uint64, id uint64, local []uint64, from, to int, ext uint64) []byte {
	parent := "null"
	if from > 0 {
		parent = strconv.FormatUint(ext+uint64(from-1), 10)
	}
	var blocks []string
	for i := from; i < to; i++ {
		blocks = append(blocks, fmt.Sprintf(`{"block_hash":%d,"tokens_hash":%d}`, ext+uint64(i), local[i]))
	}
	return fmt.Appendf(nil, `{"worker_id":%d,"event":{"event_id":%d,"data":{"stored":{"parent_hash":%s,"blocks":[%s]}},"dp_rank":0}}`,
		worker, id, parent, strings.Join(blocks, ","))
}

// TestSequenceHashesFromKVEvents: the sequence hashes the index derives
// from KV events (RouterEvent JSON, decoded as ingestion decodes it, in
// two events chained by parent hash) are Dynamo's on every vector, salted
// or not: Overlap of the vector's sequence hashes finds every block, and
// Pages names each block by the engine hash its event reported. A chain
// carrying a partial last block's hash, as Dynamo's request trace does,
// matches once FullBlockHashes drops it, and the index never claims it.
func TestSequenceHashesFromKVEvents(t *testing.T) {
	for _, v := range loadSequenceVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			ix := New()
			n := len(v.local)
			half := n / 2
			const ext = 5000
			for i, raw := range [][]byte{routerEventJSON(7, 1, v.local, 0, half, ext), routerEventJSON(7, 2, v.local, half, n, ext)} {
				re, err := schemas.Limits{}.DecodeRouterEvent(raw)
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if err := ix.Apply(kvevents.FromRouterEvent(re)); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
			}
			k := kvevents.WorkerKey{WorkerID: 7}
			if got := ix.Overlap(v.seq)[k]; got != n {
				t.Fatalf("overlap %d of the vector's %d sequence hashes", got, n)
			}
			want := make([]uint64, n)
			for i := range want {
				want[i] = ext + uint64(i)
			}
			if got := ix.Pages(k, v.seq); !slices.Equal(got, want) {
				t.Errorf("Pages = %v, want %v", got, want)
			}
			// Dynamo's trace: one more hash for the partial last block.
			full := n * v.blockSize
			if len(v.tokens) <= full {
				return
			}
			partial := kvevents.LocalBlockHashes(v.tokens[full:], len(v.tokens)-full)[0]
			traced := []uint64{partial}
			if n > 0 {
				traced = append(slices.Clone(v.seq), kvevents.NextSequenceHash(v.seq[n-1], partial))
			}
			kept := kvevents.FullBlockHashes(traced, len(v.tokens), v.blockSize)
			if len(kept) != n || !slices.Equal(kept, v.seq[:n]) {
				t.Errorf("FullBlockHashes kept %d of %d, want the %d full blocks", len(kept), len(traced), n)
			}
			if got := ix.Overlap(traced)[k]; got != n {
				t.Errorf("overlap of the traced chain %d, want %d", got, n)
			}
			if got := ix.Pages(k, traced); len(got) != n {
				t.Errorf("Pages of the traced chain: %d pages, want %d", len(got), n)
			}
		})
	}
}

// TestPagesStopsAtAHole: pages are the leading run the worker holds, on
// any tier, device first; an unknown worker has none.
func TestPagesStopsAtAHole(t *testing.T) {
	local, seq := randomPrompt(3, 6)
	ix := New()
	w := kvevents.WorkerKey{WorkerID: 1}
	mustApply(t, ix, storeRange(w, 1, local, 0, 6, 100))
	host := storeRange(w, 2, local, 0, 6, 900)
	host.Tier = schemas.TierHostPinned
	mustApply(t, ix, host)
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 3, Kind: schemas.KindRemoved, Removed: []uint64{102}})
	got := ix.Pages(w, seq)
	// Block 2 left the device but is still on host, under its host hash.
	if want := []uint64{100, 101, 902, 103, 104, 105}; !slices.Equal(got, want) {
		t.Errorf("Pages = %v, want %v", got, want)
	}
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 4, Kind: schemas.KindRemoved, Removed: []uint64{903}, Tier: schemas.TierHostPinned})
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 5, Kind: schemas.KindRemoved, Removed: []uint64{103}})
	if got := ix.Pages(w, seq); !slices.Equal(got, []uint64{100, 101, 902}) {
		t.Errorf("after block 3 left every tier: Pages = %v, want the three before it", got)
	}
	if got := ix.Pages(kvevents.WorkerKey{WorkerID: 2}, seq); got != nil {
		t.Errorf("unknown worker: %v", got)
	}
	if got := ix.Pages(w, nil); got != nil {
		t.Errorf("no hashes: %v", got)
	}
}

// BenchmarkPages: one worker holding n device blocks (in chains of 1,024)
// answers a 128-block prompt's pages: a pass over its table, per pin or
// prefetch of a prompt known by hashes.
func BenchmarkPages(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ix := New()
			w := kvevents.WorkerKey{WorkerID: 1}
			var seq []uint64
			for c := 0; c*1024 < n; c++ {
				local, s := randomPrompt(uint64(c), 1024)
				if err := ix.Apply(storeRange(w, uint64(c+1), local, 0, 1024, uint64(c)<<20)); err != nil {
					b.Fatal(err)
				}
				if c == 0 {
					seq = s[:128]
				}
			}
			b.ResetTimer()
			for range b.N {
				if got := ix.Pages(w, seq); len(got) != 128 {
					b.Fatalf("%d pages", len(got))
				}
			}
		})
	}
}

// TestPagesBesideApply: Pages reads a worker's tables under its lock
// while its events are applied and it is removed and re-added (run with
// -race): every answer is a leading run of the pages some moment held.
func TestPagesBesideApply(t *testing.T) {
	local, seq := randomPrompt(9, 64)
	ix := New()
	w := kvevents.WorkerKey{WorkerID: 3}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			ev := storeRange(w, uint64(2*i+1), local, 0, 64, 1000)
			_ = ix.Apply(ev)
			_ = ix.Apply(kvevents.Event{Worker: w, EventID: uint64(2*i + 2), Kind: schemas.KindRemoved, Removed: []uint64{1000 + uint64(i%64)}})
			if i%50 == 49 {
				ix.RemoveWorker(3)
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		for i, h := range ix.Pages(w, seq) {
			if h != 1000+uint64(i) {
				t.Fatalf("page %d is %d, not the block's engine hash %d", i, h, 1000+i)
			}
		}
	}
}
