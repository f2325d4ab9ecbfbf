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
// It costs one pass over k's tables (O(its blocks)) under k's lock, which
// delays k's events that long: a hint decision per tool call or wake-up
// can afford it, a per-event path could not.
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
	fill := func(ext, seq uint64) bool {
		if i, ok := pos[seq]; ok && !found[i] {
			out[i], found[i] = ext, true
		}
		return true
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead {
		return nil
	}
	st.device.all(fill)
	for _, m := range st.other {
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
