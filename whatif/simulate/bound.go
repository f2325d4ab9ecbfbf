package simulate

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/hintstream/hintstream/kvevents"
)

// The clairvoyant bound: the least prefill cost any policy can reach on
// a workload with the run's capacities, whatever it routes, prefetches,
// pins or evicts, knowing every future request.
//
// It plays the rules literally where they are provable and
// relaxes them where a rule would only be a heuristic:
//
//   - It knows every future request, so every access's next use.
//   - Every turn's reusable pages are on its worker when it arrives: a
//     prefetch before every turn, free and instant (no transfer time).
//     Then a page kept anywhere, on any device or in L3, is a device hit
//     when its turn comes, so device caches and L3 together act as one
//     store of Workers×DeviceBlocks + L3Blocks pages. (The bound does not
//     cap a turn's hits at one worker's DeviceBlocks; that only makes it
//     lower, so still a bound.)
//   - That store evicts by Belady's rule, furthest next use first, and
//     keeps a page only while it has a next use. Keeping the most reuse
//     intervals with at most C of them overlapping is k-track interval
//     scheduling with unit weights (every page is one block of the same
//     size), and the greedy by start time that drops the interval ending
//     last is optimal for it (Carlisle & Lloyd 1995; it is Belady's
//     MIN with bypass). So no policy keeps more pages for their next use.
//   - Anything a real run gets is a page it kept somewhere since the
//     page's last use: a block enters a device or L3 only when a request
//     holding it is served (a prefetch copies from L3). Real runs also
//     pay Alpha for L3 loads, lose hits to prefix order and routing, and
//     hold pages without a next use; the bound pays none of that.
//
// Requests at the same instant are played in their order, each seeing
// the pages of the ones before it (a real run serves them so), and a
// page's interval ends before the intervals that start at that instant
// are counted (half-open), which again can only lower the bound.
//
// The cost it gives is therefore at most any run's cost, with or without
// transfer time (which only delays what a run gets). Run checks that no
// run beats it (ErrBoundBeaten); bound_test.go checks it on small
// workloads against an exhaustive search over every routing, prefetch
// and eviction choice.

// boundResult is the bound's outcome per request: blocks kept for it.
type boundResult struct {
	hits []int // per request: full blocks found kept
}

// clairvoyant computes the bound for seqs (each request's full blocks, by
// block identity, in play order), at (each request's time) and a store of
// capacity pages.
func clairvoyant(seqs [][]uint64, at []int64, capacity int) boundResult {
	var f flatSeqs
	for _, s := range seqs {
		f.add(s)
	}
	return clairvoyantFlat(&f, at, capacity)
}

// flatSeqs holds every request's blocks in one array: request i's are
// blocks[off[i]:off[i+1]]. Twelve bytes a block with the next-use table,
// against a slice header and an allocation per request.
type flatSeqs struct {
	blocks []uint64
	off    []int
}

func (f *flatSeqs) add(seq []uint64) {
	if len(f.off) == 0 {
		f.off = append(f.off, 0)
	}
	f.blocks = append(f.blocks, seq...)
	f.off = append(f.off, len(f.blocks))
}

func (f *flatSeqs) len() int {
	return max(len(f.off)-1, 0)
}

func (f *flatSeqs) seq(i int) []uint64 { return f.blocks[f.off[i]:f.off[i+1]] }

// clairvoyantFlat is clairvoyant on flat seqs.
func clairvoyantFlat(f *flatSeqs, at []int64, capacity int) boundResult {
	n := f.len()
	res := boundResult{hits: make([]int, n)}
	// next[b]: the next request holding block b (an index into
	// f.blocks), or n (never).
	next := make([]int32, len(f.blocks))
	last := map[uint64]int32{}
	for i := n - 1; i >= 0; i-- {
		for b := f.off[i]; b < f.off[i+1]; b++ {
			h := f.blocks[b]
			if j, ok := last[h]; ok {
				next[b] = j
			} else {
				next[b] = int32(n)
			}
			last[h] = int32(i)
		}
	}
	last = nil
	kept := map[uint64]int32{} // page → its next use
	h := &farthest{}
	for i := 0; i < n; {
		// One instant: requests i..j-1.
		j := i + 1
		for j < n && at[j] == at[i] {
			j++
		}
		produced := map[uint64]bool{}
		for r := i; r < j; r++ {
			for _, b := range f.seq(r) {
				if _, ok := kept[b]; ok || produced[b] {
					res.hits[r]++
				}
			}
			for _, b := range f.seq(r) {
				produced[b] = true
			}
		}
		// The instant's intervals end, and its new ones start.
		for r := i; r < j; r++ {
			for k := f.off[r]; k < f.off[r+1]; k++ {
				b, nu := f.blocks[k], next[k]
				if nu >= int32(j) || nu == int32(n) {
					// The latest access at this instant sets the page's
					// next use; earlier ones at this instant point inside it.
					if nu == int32(n) {
						delete(kept, b)
						continue
					}
					kept[b] = nu
					heap.Push(h, item{page: b, next: nu})
				}
			}
		}
		for len(kept) > capacity {
			it := heap.Pop(h).(item)
			if nu, ok := kept[it.page]; ok && nu == it.next {
				delete(kept, it.page)
			}
		}
		i = j
	}
	return res
}

type item struct {
	page uint64
	next int32
}

// farthest is a max-heap on next use; entries whose page was re-used
// (a newer next use) or dropped are skipped when popped. Ties (pages
// next used by the same request) go by page, so which of them is kept
// does not depend on the heap's history (evictFarthest rebuilds it from
// a map): the count kept is the same either way, but the mechanism
// breakdown reads which.
type farthest []item

func (f farthest) Len() int { return len(f) }
func (f farthest) Less(a, b int) bool {
	return f[a].next > f[b].next || (f[a].next == f[b].next && f[a].page > f[b].page)
}
func (f farthest) Swap(a, b int) { f[a], f[b] = f[b], f[a] }
func (f *farthest) Push(x any)   { *f = append(*f, x.(item)) }
func (f *farthest) Pop() any {
	old := *f
	it := old[len(old)-1]
	*f = old[:len(old)-1]
	return it
}

// boundMode plays the bound for the run's workload and capacities.
// It also returns the blocks it keeps for each request.
func boundMode(cfg Config, pr *prompts) (ModeResult, []int, error) {
	w := cfg.Workload
	hits := make([]int, w.Len())
	res, err := boundPlay(cfg, func(i, n int) error { hits[i] = n; return nil })
	if err != nil {
		return res, nil, err
	}
	res.PerRequestCost = make([]float64, w.Len())
	for i := range w.Len() {
		r := w.Req(i)
		res.PerRequestCost[i] = float64(r.InputLength - min(hits[i]*w.BlockSize, r.InputLength))
	}
	return res, hits, nil
}

// boundSpill plays the bound as boundMode does, keeping each request's
// blocks in a spill (read back once, in request order) instead of in
// memory: for a play whose memory must not grow with the trace. The
// result has no per-request costs.
// Each request's entry is its hits, its block count, then which blocks
// the bound kept, 32 to a word (read back with boundKept): what the
// mechanism breakdown charges block by block.
func boundSpill(cfg Config) (ModeResult, *int32Spill, error) {
	sp, err := newInt32Spill(cfg.TempDir, "bound-hits")
	if err != nil {
		return ModeResult{}, nil, err
	}
	res, err := boundPlayKept(cfg, func(_, n int, kept []bool) error {
		if err := sp.add(int32(n)); err != nil {
			return err
		}
		if err := sp.add(int32(len(kept))); err != nil {
			return err
		}
		for k := 0; k < len(kept); k += 32 {
			var word uint32
			for b := k; b < min(k+32, len(kept)); b++ {
				if kept[b] {
					word |= 1 << (b - k)
				}
			}
			if err := sp.add(int32(word)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = sp.rewind()
	}
	if err != nil {
		sp.close()
		return res, nil, err
	}
	return res, sp, nil
}

// boundKept reads the next request's entry of a boundSpill: its hits,
// and which of its blocks the bound kept (into dst).
func boundKept(sp *int32Spill, dst []bool) (int32, []bool, error) {
	hits, err := sp.next()
	if err != nil {
		return 0, dst, err
	}
	n, err := sp.next()
	if err != nil {
		return 0, dst, err
	}
	dst = dst[:0]
	for k := 0; k < int(n); k += 32 {
		w, err := sp.next()
		if err != nil {
			return 0, dst, err
		}
		for b := k; b < min(k+32, int(n)); b++ {
			dst = append(dst, uint32(w)&(1<<(b-k)) != 0)
		}
	}
	return hits, dst, nil
}

// boundPlay computes the bound and hands each request's kept leading
// blocks to hit, in request order.
func boundPlay(cfg Config, hit func(i, blocks int) error) (ModeResult, error) {
	return boundPlayKept(cfg, func(i, n int, _ []bool) error { return hit(i, n) })
}

// boundPlayKept is boundPlay that also hands hit which blocks were kept.
func boundPlayKept(cfg Config, hit func(i, blocks int, kept []bool) error) (ModeResult, error) {
	w := cfg.Workload
	// The blocks' sequence hashes only (a worker's, as the runs see
	// them): the L3 keys are not needed, and hashing them would hold
	// every prompt's. The next uses go through a tape on disk (tape.go):
	// memory holds one entry per distinct block, not one per occurrence;
	// each request's block count goes to a spill, read back in order.
	t, err := newTape(cfg.TempDir)
	if err != nil {
		return ModeResult{}, err
	}
	defer t.close()
	counts, err := newInt32Spill(cfg.TempDir, "bound-blocks")
	if err != nil {
		return ModeResult{}, err
	}
	defer counts.close()
	n := w.Len()
	for i := range n {
		held := w.Req(i).HashIDs != nil
		if err := loadIDs(cfg, i); err != nil {
			return ModeResult{}, err
		}
		seq := kvevents.PromptHashes(w.PromptTokens(i), w.BlockSize)
		if !held {
			dropIDs(cfg, i)
		}
		if err := counts.add(int32(len(seq))); err != nil {
			return ModeResult{}, err
		}
		if err := t.add(i, seq); err != nil {
			return ModeResult{}, err
		}
	}
	rd, err := t.rewind()
	if err != nil {
		return ModeResult{}, err
	}
	if err := counts.rewind(); err != nil {
		return ModeResult{}, err
	}
	res := ModeResult{Mode: ModeBound, PrefetchAccuracy: math.NaN(), PinsHonoured: math.NaN()}
	blocks := func(int) (int, error) { n, err := counts.next(); return int(n), err }
	err = clairvoyantTapeKept(rd, n, blocks, func(i int) int64 { return int64(w.Req(i).At) }, cfg.Workers*cfg.DeviceBlocks+cfg.L3Blocks,
		func(i, hits int, kept []bool) error {
			r := w.Req(i)
			got := int64(min(hits*w.BlockSize, r.InputLength))
			res.Requests++
			res.PromptTokens += int64(r.InputLength)
			res.DeviceHitTokens += got
			res.RecomputedTokens += int64(r.InputLength) - got
			return hit(i, hits, kept)
		})
	if err != nil {
		return ModeResult{}, err
	}
	if err := w.Err(); err != nil {
		return ModeResult{}, fmt.Errorf("simulate: reading the workload back: %w", err)
	}
	res.Cost = float64(res.RecomputedTokens)
	return res, nil
}
