package index

import "sync/atomic"

// Every lookup of a large index misses the cache, and on a virtual
// machine a miss (with its nested page walk) can take half a microsecond.
// A loop that probes tables one key at a time keeps only the few misses
// of its out-of-order window in flight. So the index first collects the
// addresses of the slots a batch of keys will probe, then loads them all
// in a loop of a few instructions per load, which puts the whole batch
// in flight at once, and only then probes, from cache.

// prefetchKeys bounds the keys prefetched at once (two lines each, so
// 128 lines: a quarter of L1).
const prefetchKeys = 64

// lookahead is the entry offset of the second line loaded per key: a
// probe that starts late in its line runs on into the next.
const lookahead = 64 / 16

// loadAll loads every *p. Not inlined, so that its loads cannot be
// optimised away. Callers keep ptrs on their stack: pointer writes to the
// heap would cost write barriers while the garbage collector runs.
//
//go:noinline
func loadAll(ptrs []*uint64) uint64 {
	var s uint64
	for _, p := range ptrs {
		s += atomic.LoadUint64(p)
	}
	return s
}

// addrs appends the addresses of the lines a probe for key will read.
func (t *bitTable) addrs(h uint64, out []*uint64) []*uint64 {
	d := t.cur.Load()
	if d == nil {
		return out
	}
	i := homeSlot(h, d.n)
	return append(out, &d.s[i].key, &d.s[min(i+lookahead, d.n)].key)
}

func (p *page) addrs(key uint64, out []*uint64) []*uint64 {
	t, h := p.table(key)
	return t.addrs(h, out)
}

// addrs appends the addresses of the lines a probe for key will read.
func (t *extTable) addrs(key uint64, out []*uint64) []*uint64 {
	n := t.n()
	if n == 0 {
		return out
	}
	i := homeSlot(spread(key), n)
	return append(out, &t.slots[i].key, &t.slots[min(i+lookahead, n)].key)
}
