package index

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// mix64 is SplitMix64's finaliser: distinct inputs give distinct,
// random-looking hashes, so workloads need no stored hash lists.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// chainWorker feeds one worker an endless run of chains: block n (its
// n-th stored block) has external hash ext(n) and is the
// (n % chainLen)-th block of its chain, so every event but a chain's
// first continues from a parent.
type chainWorker struct {
	key      kvevents.WorkerKey
	salt     uint64 // distinguishes the contents of workers or groups
	chainLen uint64
	next     uint64         // next block number to store
	ev       kvevents.Event // reused
	parent   uint64
}

func (c *chainWorker) ext(n uint64) uint64   { return mix64(c.salt<<40 ^ n) }
func (c *chainWorker) local(n uint64) uint64 { return mix64(^(c.salt<<40 ^ n)) }

// stored returns the event storing the next k blocks (k divides chainLen).
func (c *chainWorker) stored(k int) *kvevents.Event {
	ev := &c.ev
	*ev = kvevents.Event{Worker: c.key, Kind: schemas.KindStored, Blocks: ev.Blocks[:0], Removed: ev.Removed}
	if c.next%c.chainLen != 0 {
		c.parent = c.ext(c.next - 1)
		ev.ParentHash = &c.parent
	}
	for range k {
		ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: c.ext(c.next), LocalHash: c.local(c.next)})
		c.next++
	}
	return ev
}

// removed returns the event removing blocks [from, from+k).
func (c *chainWorker) removed(from uint64, k int) *kvevents.Event {
	ev := &c.ev
	*ev = kvevents.Event{Worker: c.key, Kind: schemas.KindRemoved, Blocks: ev.Blocks, Removed: ev.Removed[:0]}
	for n := from; n < from+uint64(k); n++ {
		ev.Removed = append(ev.Removed, c.ext(n))
	}
	return ev
}

func applyB(b *testing.B, ix *Memory, ev *kvevents.Event) {
	if err := ix.Apply(*ev); err != nil {
		b.Fatal(err)
	}
}

const (
	benchWorkers  = 64
	benchEvent    = 32  // blocks per stored event
	benchChainLen = 512 // blocks per chain
)

// benchSizes are the index sizes (device entries) of the Apply
// benchmarks: one whose tables fit in cache, and one that does not.
var benchSizes = []struct {
	name    string
	entries int
}{{"entries=64K", 1 << 16}, {"entries=1M", 1 << 20}}

// BenchmarkApplyStored fills an index: stored events of 32 blocks, each
// chain continuing from its parent (so every block's sequence hash is
// computed), round robin over 64 workers, until the index holds the
// size's entries; then (timer stopped) it starts over with a new index.
// Table growth is included.
func BenchmarkApplyStored(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			perWorker := uint64(size.entries / benchWorkers)
			var ix *Memory
			var cws []*chainWorker
			reset := func() {
				ix = New()
				cws = make([]*chainWorker, benchWorkers)
				for w := range cws {
					cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: benchChainLen}
				}
			}
			reset()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := cws[i%benchWorkers]
				i++
				if c.next == perWorker {
					b.StopTimer()
					reset()
					c = cws[0]
					i = 1
					b.StartTimer()
				}
				i++
				applyB(b, ix, c.stored(benchEvent))
			}
			reportBlocks(b, benchEvent)
		})
	}
}

// BenchmarkApplyChurn is the steady state of full caches: each op stores
// 32 new blocks for a worker (chained as above) and removes its 32 oldest,
// over 64 workers holding the size's entries in all.
func BenchmarkApplyChurn(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			perWorker := uint64(size.entries / benchWorkers)
			ix := New()
			cws := make([]*chainWorker, benchWorkers)
			for w := range cws {
				cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: benchChainLen}
				for cws[w].next < perWorker {
					applyB(b, ix, cws[w].stored(benchEvent))
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := cws[i%benchWorkers]
				i++
				applyB(b, ix, c.stored(benchEvent))
				applyB(b, ix, c.removed(c.next-perWorker-benchEvent, benchEvent))
			}
			if got := ix.Stats().Entries; got != int64(size.entries) {
				b.Fatalf("entries %d, want %d", got, size.entries)
			}
			reportBlocks(b, benchEvent)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*benchEvent), "ns/block-op")
		})
	}
}

// BenchmarkApplyStoredSteady is a production index sized for its
// cluster (WithCapacity) and already full, over 64 workers of 32-block
// chained events. churn: each op stores 32 new blocks for a worker and
// removes its 32 oldest, so the entries stay at the size; ns/block-op
// counts a store and a removal one each. store: the index is sized for
// twice the size and pre-filled to the size; each op stores 32 new blocks
// and nothing is removed until the headroom is used up, when (timer
// stopped) every worker's oldest blocks are removed down to the size
// again. Purging the lookup's tombstones (a same-size rebuild of a shard
// once removed keys fill it) is part of both steady states.
func BenchmarkApplyStoredSteady(b *testing.B) {
	for _, size := range benchSizes {
		perWorker := uint64(size.entries / benchWorkers)
		fill := func(b *testing.B, capacity int) (*Memory, []*chainWorker) {
			ix := New(WithCapacity(int64(capacity)))
			cws := make([]*chainWorker, benchWorkers)
			for w := range cws {
				cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: benchChainLen}
				for cws[w].next < perWorker {
					applyB(b, ix, cws[w].stored(benchEvent))
				}
			}
			return ix, cws
		}
		b.Run(size.name+"/churn", func(b *testing.B) {
			ix, cws := fill(b, size.entries)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := cws[i%benchWorkers]
				i++
				applyB(b, ix, c.stored(benchEvent))
				applyB(b, ix, c.removed(c.next-perWorker-benchEvent, benchEvent))
			}
			if got := ix.Stats().Entries; got != int64(size.entries) {
				b.Fatalf("entries %d, want %d", got, size.entries)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*benchEvent), "ns/block-op")
		})
		b.Run(size.name+"/store", func(b *testing.B) {
			ix, cws := fill(b, 2*size.entries)
			storeSteady(b, cws, perWorker, func(ev *kvevents.Event) { applyB(b, ix, ev) })
		})
	}
}

// storeSteady is the store steady state of BenchmarkApplyStoredSteady
// for an applier already holding perWorker blocks of each of cws: each
// op stores 32 new blocks for a worker, and once every worker holds
// twice its share, the timer stops while each worker's oldest blocks are
// removed down to its share.
func storeSteady(b *testing.B, cws []*chainWorker, perWorker uint64, apply func(*kvevents.Event)) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := cws[i%benchWorkers]
		if i%benchWorkers == 0 && c.next%perWorker == 0 && c.next > perWorker {
			// Every worker holds twice its share: the headroom is used.
			b.StopTimer()
			for _, c := range cws {
				for from := c.next - 2*perWorker; from < c.next-perWorker; from += benchEvent {
					apply(c.removed(from, benchEvent))
				}
			}
			b.StartTimer()
		}
		i++
		apply(c.stored(benchEvent))
	}
	reportBlocks(b, benchEvent)
}

// BenchmarkBaselineRadixTree runs the store steady state of
// BenchmarkApplyStoredSteady on radixTree, Dynamo's first index redone in
// Go: the baseline the stored-block target is set against ("Dynamo's
// first radix tree did about 4M ops/s"; the target is 2.5 times that).
func BenchmarkBaselineRadixTree(b *testing.B) {
	for _, size := range benchSizes {
		perWorker := uint64(size.entries / benchWorkers)
		b.Run(size.name+"/store", func(b *testing.B) {
			t := newRadixTree()
			cws := make([]*chainWorker, benchWorkers)
			apply := func(ev *kvevents.Event) {
				if err := t.apply(ev); err != nil {
					b.Fatal(err)
				}
			}
			for w := range cws {
				cws[w] = &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w), chainLen: benchChainLen}
				for cws[w].next < perWorker {
					apply(cws[w].stored(benchEvent))
				}
			}
			if got := t.entries(); got != size.entries {
				b.Fatalf("entries %d, want %d", got, size.entries)
			}
			storeSteady(b, cws, perWorker, apply)
		})
	}
}

func reportBlocks(b *testing.B, perOp int) {
	blocks := float64(b.N * perOp)
	b.ReportMetric(blocks/b.Elapsed().Seconds(), "blocks/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/blocks, "ns/block")
}

// BenchmarkBaselineMapInsert inserts random keys into a Go
// map[uint64]uint64, growing it from empty to the size's entries and
// starting over (timer stopped): the cost of one hash-table insert on
// this machine, to compare with BenchmarkApplyStored's ns/block.
func BenchmarkBaselineMapInsert(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			m := make(map[uint64]uint64)
			var n uint64
			for b.Loop() {
				if len(m) == size.entries {
					b.StopTimer()
					m = make(map[uint64]uint64)
					b.StartTimer()
				}
				m[mix64(n)] = n
				n++
			}
			reportBlocks(b, 1)
		})
	}
}

// overlapPrompt is the Overlap benchmark's cluster: 64 workers holding
// 1M device entries in all. The 2,048-block prompt starts with a
// 128-block system prompt. Worker 0 holds the whole prompt, workers 1-7
// leading parts of it, workers 8-23 the system prompt and then another
// conversation, workers 24-63 other system prompts and conversations;
// every worker also holds unrelated chains up to 1M/64 entries.
func overlapPrompt(tb testing.TB, opts ...Option) (*Memory, []uint64, map[kvevents.WorkerKey]int) {
	ix, seq, want, _ := overlapPromptLocal(tb, opts...)
	return ix, seq, want
}

// overlapPromptLocal is overlapPrompt, also returning the prompt's local
// hashes (for BenchmarkOverlapTiers to offload some of it).
func overlapPromptLocal(tb testing.TB, opts ...Option) (*Memory, []uint64, map[kvevents.WorkerKey]int, []uint64) {
	const prompt, sys, perWorker = 2048, 128, 1 << 20 / benchWorkers
	r := rand.New(rand.NewPCG(42, 42))
	randLocal := func(n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	sysPrompts := [][]uint64{randLocal(sys), randLocal(64), randLocal(200), randLocal(256)}
	local := append(append([]uint64{}, sysPrompts[0]...), randLocal(prompt-sys)...)
	seq := kvevents.SequenceHashes(local)
	depths := []int{prompt, 1536, 1024, 700, 512, 300, 200, 129}

	ix := New(opts...)
	want := map[kvevents.WorkerKey]int{}
	for w := range benchWorkers {
		k := kvevents.WorkerKey{WorkerID: uint64(100 + w)}
		var chain []uint64
		switch {
		case w < len(depths):
			chain = local[:depths[w]]
			want[k] = depths[w]
		case w < 24:
			chain = append(append([]uint64{}, sysPrompts[0]...), randLocal(1000)...)
			want[k] = sys
		default:
			chain = append(append([]uint64{}, sysPrompts[1+w%3]...), randLocal(1000)...)
		}
		ext := uint64(w) << 32
		store := func(chain []uint64) {
			for from := 0; from < len(chain); from += 64 {
				ev := kvevents.Event{Worker: k, Kind: schemas.KindStored}
				if from > 0 {
					ev.ParentHash = u64p(ext - 1)
				}
				for _, l := range chain[from:min(from+64, len(chain))] {
					ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext, LocalHash: l})
					ext++
				}
				if err := ix.Apply(ev); err != nil {
					tb.Fatal(err)
				}
			}
		}
		store(chain)
		for left := perWorker - len(chain); left > 0; left -= 1024 {
			store(randLocal(min(left, 1024)))
		}
	}
	if st := ix.Stats(); st.Entries != 1<<20 {
		tb.Fatalf("entries %d, want %d", st.Entries, 1<<20)
	}
	if got := ix.Overlap(seq); !maps.Equal(got, want) {
		tb.Fatalf("Overlap = %v, want %v", got, want)
	}
	return ix, seq, want, local
}

// overlapRotation is the cold Overlap cluster: 128 prompts of 2,048
// blocks sharing a 128-block system prompt; worker w (of 64) holds
// prompts w and w+64 whole, plus unrelated chains up to 1M/64 entries.
// So each prompt is held whole by one worker and for 128 blocks by all.
// Looking the prompts up in turn touches some 16 MB of table lines
// between two lookups of one prompt: more than this machine caches.
func overlapRotation(tb testing.TB, opts ...Option) (*Memory, [][]uint64) {
	const prompts, prompt, sys, perWorker = 128, 2048, 128, 1 << 20 / benchWorkers
	r := rand.New(rand.NewPCG(43, 43))
	randLocal := func(n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	system := randLocal(sys)
	locals := make([][]uint64, prompts)
	seqs := make([][]uint64, prompts)
	for p := range locals {
		locals[p] = append(append([]uint64{}, system...), randLocal(prompt-sys)...)
		seqs[p] = kvevents.SequenceHashes(locals[p])
	}
	ix := New(opts...)
	for w := range benchWorkers {
		k := kvevents.WorkerKey{WorkerID: uint64(w)}
		ext := uint64(w) << 32
		held := 0
		store := func(chain []uint64) {
			for from := 0; from < len(chain); from += 64 {
				ev := kvevents.Event{Worker: k, Kind: schemas.KindStored}
				if from > 0 {
					ev.ParentHash = u64p(ext - 1)
				}
				for _, l := range chain[from:min(from+64, len(chain))] {
					ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext, LocalHash: l})
					ext++
				}
				if err := ix.Apply(ev); err != nil {
					tb.Fatal(err)
				}
			}
		}
		// The second prompt's system blocks are the first's: the engine
		// stores only its own blocks, chained onto the held prefix.
		store(locals[w])
		sysExt := ext - prompt + sys - 1
		ev := kvevents.Event{Worker: k, Kind: schemas.KindStored, ParentHash: u64p(sysExt)}
		for i, l := range locals[w+benchWorkers][sys:] {
			ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext + uint64(i), LocalHash: l})
		}
		ext += prompt - sys
		if err := ix.Apply(ev); err != nil {
			tb.Fatal(err)
		}
		held = 2*prompt - sys
		for left := perWorker - held; left > 0; left -= 1024 {
			store(randLocal(min(left, 1024)))
		}
	}
	if st := ix.Stats(); st.Entries != 1<<20 {
		tb.Fatalf("entries %d, want %d", st.Entries, 1<<20)
	}
	for p, seq := range seqs {
		ov := ix.Overlap(seq)
		if len(ov) != benchWorkers || ov[kvevents.WorkerKey{WorkerID: uint64(p % benchWorkers)}] != prompt || ov[kvevents.WorkerKey{WorkerID: uint64(p+1) % benchWorkers}] != sys {
			tb.Fatalf("Overlap(prompt %d) = %v", p, ov)
		}
	}
	return ix, seqs
}

// BenchmarkOverlap looks up a 2,048-block prompt, given its sequence
// hashes (hashing the prompt is BenchmarkPromptHashes), among 64 workers
// holding 1M device entries. hot: the prompt of overlapPrompt, every op
// (its table lines stay cached, as for a popular prompt); cold: the
// prompts of overlapRotation in turn. jump=32 is the default (probes
// every 32nd block, see WithJump); jump=1 looks up every block.
func BenchmarkOverlap(b *testing.B) {
	for _, jump := range []int{DefaultJump, 1} {
		opt := WithJump(jump)
		name := fmt.Sprintf("jump=%d", jump)
		b.Run(name+"/hot", func(b *testing.B) {
			ix, seq, want := overlapPrompt(b, opt)
			b.ReportAllocs()
			for b.Loop() {
				if len(ix.Overlap(seq)) != len(want) {
					b.Fatal("wrong overlap")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seq)), "ns/block")
		})
		b.Run(name+"/cold", func(b *testing.B) {
			ix, seqs := overlapRotation(b, opt)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if len(ix.Overlap(seqs[i%len(seqs)])) != benchWorkers {
					b.Fatal("wrong overlap")
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seqs[0])), "ns/block")
		})
	}
}

// BenchmarkBaselineMapLookup looks up 2,048 present keys per op in a Go
// map[uint64]uint64 of 1M entries: hot, the same keys every op; cold, 128
// sets of keys in turn.
func BenchmarkBaselineMapLookup(b *testing.B) {
	m := make(map[uint64]uint64, 1<<20)
	for n := range uint64(1 << 20) {
		m[mix64(n)] = n
	}
	for _, sets := range []int{1, 128} {
		name := "hot"
		if sets > 1 {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			keys := make([][]uint64, sets)
			for s := range keys {
				keys[s] = make([]uint64, 2048)
				for i := range keys[s] {
					keys[s][i] = mix64(uint64(s*2048+i) * 3 % (1 << 20))
				}
			}
			var sum uint64
			i := 0
			for b.Loop() {
				for _, k := range keys[i%sets] {
					sum += m[k]
				}
				i++
			}
			if sum == 0 {
				b.Fatal("no key found")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2048), "ns/block")
		})
	}
}

// BenchmarkMemoryPerEntry builds an index of 10M device (block, worker)
// entries over 64 workers and reports the heap it holds (HeapAlloc after
// GC, after minus before) per entry. holders=1: every block held by one
// worker (the worst case: one lookup key per entry); holders=4: 2.5M
// blocks each held by the 4 workers of a group. Run with -benchtime=1x.
func BenchmarkMemoryPerEntry(b *testing.B) {
	const entries = 10_000_000
	for _, holders := range []int{1, 4} {
		b.Run("holders="+string(rune('0'+holders)), func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				ix := New(WithLogger(nil))
				perWorker := uint64(entries / benchWorkers)
				for w := range benchWorkers {
					c := &chainWorker{key: kvevents.WorkerKey{WorkerID: uint64(w)}, salt: uint64(w / holders), chainLen: 1024}
					for c.next < perWorker {
						applyB(b, ix, c.stored(int(min(64, perWorker-c.next))))
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				st := ix.Stats()
				if st.Entries != entries || st.Hashes != entries/holders {
					b.Fatalf("Stats = %+v", st)
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/entries, "bytes/entry")
				runtime.KeepAlive(ix)
			}
		})
	}
}
