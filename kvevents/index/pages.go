package index

import "github.com/hintstream/hintstream/kvevents"

// Pages returns the engine's own block hashes (the external hashes its
// KV events named) of the leading seqHashes that pair k holds on any
// tier, first block first, stopping at the first block it does not hold.
// They are what a pin or prefetch known only by sequence hashes names:
// the pages as the worker reported them, never recomputed from tokens.
// A block the worker holds under two external hashes gives the one on
// device first.
//
// It costs a pass over k's tables (O(its blocks), stopping once every
// block is found) under k's lock, which delays k's events that long:
// BenchmarkPages (a 128-block prompt) measures medians of 0.14 ms at
// 10,000 blocks, 1 ms at 100,000 and 25 ms at 10^6 on a loaded two-core
// machine: a 128-block prompt's last block is near the end of the pass. A hint
// decision per request can afford the first two; an index of millions of
// blocks a worker wants a table from sequence hash to engine hash instead
// (twice the index's memory), which this one does without.
func (ix *Memory) Pages(k kvevents.WorkerKey, seqHashes []uint64) []uint64 {
	if len(seqHashes) == 0 {
		return nil
	}
	ix.mu.RLock()
	st := ix.workers[k]
	ix.mu.RUnlock()
	if st == nil {
		return nil
	}
	pos := make(map[uint64]int, len(seqHashes))
	for i, s := range seqHashes {
		if _, ok := pos[s]; !ok {
			pos[s] = i
		}
	}
	out := make([]uint64, len(seqHashes))
	found := make([]bool, len(seqHashes))
	left := len(pos)
	// Stops the pass once every wanted block is found.
	fill := func(ext, seq uint64) bool {
		if i, ok := pos[seq]; ok && !found[i] {
			out[i], found[i] = ext, true
			left--
		}
		return left > 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead {
		return nil
	}
	st.device.all(fill)
	for _, m := range st.other {
		if left == 0 {
			break
		}
		m.all(fill)
	}
	n := 0
	for n < len(found) && found[n] {
		n++
	}
	if n == 0 {
		return nil
	}
	return out[:n]
}
