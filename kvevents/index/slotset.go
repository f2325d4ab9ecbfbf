package index

import "sync/atomic"

// slot is a worker key interned to a small integer: bit slot%64 of the
// bitmaps of page slot/64.
type slot = uint16

// maxSlots bounds the (worker, dp rank) pairs an Memory tracks at once.
const maxSlots = 1 << 16

// pageSlots is the number of slots sharing one bitmap word.
const pageSlots = 64

// page is the block lookup of 64 slots: sequence hash -> bitmap of the
// slots holding that block on device, split into shards by the top bits
// of the spread hash so that each resize copies only a part.
type page struct {
	tabs      []bitTable
	shardBits uint8

	stale    atomic.Uint64 // slots whose event stream has a gap
	assigned uint64        // slots in use (Memory.mu)
}

// newPage returns an empty page whose shards allocate floor home slots
// at their first insert and never shrink below them.
func newPage(shardBits uint8, floor int) *page {
	p := &page{tabs: make([]bitTable, 1<<shardBits), shardBits: shardBits}
	for i := range p.tabs {
		p.tabs[i].shift = shardBits
		p.tabs[i].floor = floor
	}
	return p
}

// table returns the shard of key and the hash that places key in it.
func (p *page) table(key uint64) (*bitTable, uint64) {
	h := spread(key)
	return &p.tabs[h>>(64-p.shardBits)&(1<<p.shardBits-1)], h << p.shardBits
}

func (p *page) lookup(key uint64) uint64 {
	t, h := p.table(key)
	return t.lookup(key, h)
}

func (p *page) set(key, bit uint64) bool {
	t, h := p.table(key)
	return t.set(key, h, bit)
}

func (p *page) clear(key, bit uint64) bool {
	t, h := p.table(key)
	return t.clear(key, h, bit)
}
