package cluster

import "time"

// DeviceCache is one worker's device KV cache: at most Cap blocks, keyed
// by Dynamo sequence hash, least recently used evicted first. A prompt's
// blocks are touched last-to-first, so a block is always more recent than
// every block after it in any prompt that holds it: eviction takes leaves
// before their prefixes, as vLLM's free queue and SGLang's radix tree do,
// and what a worker holds of a prompt is always a prefix.
// A running request holds its blocks (Hold) until its response ends
// (Unhold): a held block is off the LRU list, so no eviction takes it,
// as an engine frees a request's blocks only when it finishes.
// Not safe for concurrent use.
type DeviceCache struct {
	cap       int
	m         map[uint64]*entry
	lru       list // unprotected blocks (and protected ones not yet seen to be), head the most recent
	protected list // blocks a retain keeps (Protect), evicted only when lru is empty
	now       time.Duration
	evictions int64
	// held counts the entries running requests hold (off the list);
	// unstored counts blocks Admit could not store because they were.
	held     int
	unstored int64
}

type entry struct {
	h          uint64
	prev, next *entry
	in         *list // the list it is on; nil while held
	// until is when a retain's protection ends (Protect); 0: none.
	until time.Duration
	// refs counts the running requests holding the block.
	refs int32
}

// list is a doubly linked list of entries, head the most recent.
type list struct{ head, tail *entry }

// NewDeviceCache returns an empty cache of capacity blocks (at least 1).
func NewDeviceCache(capacity int) *DeviceCache {
	return &DeviceCache{cap: max(capacity, 1), m: make(map[uint64]*entry, max(capacity, 1))}
}

// Cap is the capacity in blocks; Len the blocks held.
func (c *DeviceCache) Cap() int { return c.cap }
func (c *DeviceCache) Len() int { return len(c.m) }

// Evictions counts blocks evicted so far.
func (c *DeviceCache) Evictions() int64 { return c.evictions }

// Unstored counts blocks Admit left out so far because running
// requests held the rest of the device.
func (c *DeviceCache) Unstored() int64 { return c.unstored }

// Held is how many blocks running requests hold.
func (c *DeviceCache) Held() int { return c.held }

// Contains reports whether block h is held (without touching it).
func (c *DeviceCache) Contains(h uint64) bool { _, ok := c.m[h]; return ok }

// Prefix returns how many leading blocks of seq are held.
func (c *DeviceCache) Prefix(seq []uint64) int {
	for i, h := range seq {
		if _, ok := c.m[h]; !ok {
			return i
		}
	}
	return len(seq)
}

// Run is a range of newly stored blocks of a prompt: seq[Start:End].
type Run struct{ Start, End int }

// Admission is what Admit did.
type Admission struct {
	// Hit is the number of leading blocks that were already held.
	Hit int
	// Stored lists the newly stored blocks, in runs of consecutive ones.
	Stored []Run
	// Evicted lists the blocks evicted to make room, oldest first.
	Evicted []uint64
}

// Admit makes the first min(len(seq), Cap) blocks of seq resident and the
// most recent (seq[0] most of all), evicting the least recently used
// other blocks for room. Blocks running requests hold are never evicted:
// when they leave too little room, only the first new blocks that fit are
// stored (the rest counted in Unstored), so what is held of seq stays a
// prefix.
func (c *DeviceCache) Admit(seq []uint64) Admission {
	seq = seq[:min(len(seq), c.cap)]
	a := Admission{Hit: c.Prefix(seq)}
	// Held blocks first, so that making room never evicts one of them.
	fresh, kept := 0, 0
	// seq's own blocks leave the lists while room is made, so that no
	// eviction takes one (protected or not), and come back in front.
	for i := len(seq) - 1; i >= 0; i-- {
		if e, ok := c.m[seq[i]]; ok {
			if e.refs == 0 {
				c.unlink(e)
				kept++
			}
		} else {
			fresh++
		}
	}
	// Room for new blocks: all but what running requests hold and what
	// seq already has on the list.
	if room := c.cap - c.held - kept; fresh > room {
		c.unstored += int64(fresh - room)
		fresh = max(room, 0)
	}
	for len(c.m)+fresh > c.cap {
		e := c.victim()
		c.unlink(e)
		delete(c.m, e.h)
		a.Evicted = append(a.Evicted, e.h)
		c.evictions++
	}
	for i := len(seq) - 1; i >= 0; i-- {
		if e, ok := c.m[seq[i]]; ok && e.refs == 0 && e.in == nil {
			c.pushFront(e)
		}
	}
	// The first fresh new blocks in prompt order are stored.
	limit := len(seq)
	for i, n := 0, 0; i < len(seq); i++ {
		if _, ok := c.m[seq[i]]; !ok {
			if n == fresh {
				limit = i
				break
			}
			n++
		}
	}
	for i := limit - 1; i >= 0; i-- {
		if e, ok := c.m[seq[i]]; ok {
			if e.refs == 0 {
				c.moveFront(e)
			}
			continue
		}
		e := &entry{h: seq[i]}
		c.m[seq[i]] = e
		c.pushFront(e)
		if n := len(a.Stored); n > 0 && a.Stored[n-1].Start == i+1 {
			a.Stored[n-1].Start = i
		} else {
			a.Stored = append(a.Stored, Run{Start: i, End: i + 1})
		}
	}
	// Runs were found last-to-first; report them in prompt order.
	for i, j := 0, len(a.Stored)-1; i < j; i, j = i+1, j-1 {
		a.Stored[i], a.Stored[j] = a.Stored[j], a.Stored[i]
	}
	return a
}

// Hold marks the leading blocks of seq that are resident as in use by a
// running request, and returns how many it held: seq[:n] is what Unhold
// must be given when the request ends.
func (c *DeviceCache) Hold(seq []uint64) int {
	for i, h := range seq {
		e, ok := c.m[h]
		if !ok {
			return i
		}
		if e.refs == 0 {
			c.unlink(e)
			c.held++
		}
		e.refs++
	}
	return len(seq)
}

// Unhold ends a running request's hold on seq (what Hold returned a
// prefix of): a block no other request holds goes back to the list as
// the most recent, seq[0] most of all, as an engine's freed blocks are
// the last its free queue reuses.
func (c *DeviceCache) Unhold(seq []uint64) {
	for i := len(seq) - 1; i >= 0; i-- {
		e, ok := c.m[seq[i]]
		if !ok || e.refs == 0 {
			continue
		}
		if e.refs--; e.refs == 0 {
			c.held--
			c.pushFront(e)
		}
	}
}

// Order returns the blocks no running request holds, most recent first,
// protected ones after the rest (for tests and inspection).
func (c *DeviceCache) Order() []uint64 {
	out := make([]uint64, 0, len(c.m))
	for _, l := range []*list{&c.lru, &c.protected} {
		for e := l.head; e != nil; e = e.next {
			out = append(out, e.h)
		}
	}
	return out
}

// Protect keeps the resident leading blocks of seq until the simulated
// time until, as an engine keeps the blocks of a retained claim
// (vLLM's vllm.set_priority on request_cached G1 blocks): an eviction
// takes them only when no unprotected block is left, oldest first. A
// later Protect of a block extends it, never shortens it, so a block is
// protected at least as long as every block after it in any prompt,
// and what a worker holds of a prompt stays a prefix. It returns how
// many blocks it protected.
func (c *DeviceCache) Protect(seq []uint64, until time.Duration) int {
	n := c.Prefix(seq)
	for i := n - 1; i >= 0; i-- {
		e := c.m[seq[i]]
		e.until = max(e.until, until)
		if e.in != nil {
			// To the front even when already protected: a prompt's
			// blocks then lie before every block after them.
			c.unlink(e)
			c.protected.pushFront(e)
			e.in = &c.protected
		}
	}
	return n
}

// Expire sets the cache's clock to now and returns the blocks whose
// protection has ended to the least recent end of the LRU list, leaves
// last, so that they are the next evicted.
func (c *DeviceCache) Expire(now time.Duration) {
	c.now = max(c.now, now)
	for e := c.protected.head; e != nil; {
		next := e.next
		if e.until <= c.now {
			c.unlink(e)
			c.lru.pushBack(e)
			e.in = &c.lru
		}
		e = next
	}
}

// victim is the block to evict next: the least recent unprotected one,
// else the oldest protected one. A block protected while it was held
// is on the LRU list until an eviction reaches it, which moves it.
func (c *DeviceCache) victim() *entry {
	for e := c.lru.tail; e != nil; e = c.lru.tail {
		if e.until <= c.now {
			return e
		}
		c.unlink(e)
		c.protected.pushFront(e)
		e.in = &c.protected
	}
	return c.protected.tail
}

// pushFront puts e at the head of the LRU list (the most recent).
func (c *DeviceCache) pushFront(e *entry) {
	c.lru.pushFront(e)
	e.in = &c.lru
}

// unlink takes e off whichever list holds it.
func (c *DeviceCache) unlink(e *entry) {
	if e.in != nil {
		e.in.unlink(e)
		e.in = nil
	}
}

// moveFront makes e the most recent unprotected block; a protection it
// has holds again when an eviction reaches it.
func (c *DeviceCache) moveFront(e *entry) {
	if c.lru.head == e {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}

func (l *list) pushFront(e *entry) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

func (l *list) pushBack(e *entry) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	}
	l.tail = e
	if l.head == nil {
		l.head = e
	}
}

func (l *list) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
