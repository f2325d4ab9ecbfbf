package cluster

import "time"

// L3Store stands in for the Mooncake store shared by all workers: at most
// Cap pages keyed by their Mooncake object key, least recently used
// evicted first, except that a page under a live soft pin is skipped.
// Only when every page is pinned is a pinned one evicted (the least
// recently used): a soft pin is a strong preference, not a reservation,
// and each such eviction is counted as a broken pin. Pins are per slot: a
// newer pin of a slot replaces it, TTL 0 releases it, and a pin lapses at
// now+TTL on the simulated clock. A slot whose pin lapsed more than
// DefaultForgetLapsed ago is forgotten (SlotUntil no longer finds it,
// and a release or a new pin of it is not counted lapsed), so that a
// long play holds the slots of the recent past, not of the whole trace.
// Not safe for concurrent use.
type L3Store struct {
	cap        int
	m          map[string]*page
	head, tail *page
	slots      map[string]*slot
	sincePrune int  // pins since pruneLapsed last ran
	noPrune    bool // tests: keep lapsed pins' keys, to compare
	stats      L3Stats
	gen        uint64 // marks the pages one Put must not evict
	// scan is where the next eviction of Put number scanGen resumes its
	// walk from the tail (scanned: set). Everything between the tail and
	// it was skipped (pinned, or held by the Put) and still is: within one
	// Put pins and times do not change and new pages go to the front. So
	// a Put of k pages walks past the pinned tail once, not k times.
	scan    *page
	scanGen uint64
	scanned bool
	// arc, when set, orders eviction by ARC instead (l3_arc.go).
	arc *arcState
}

type page struct {
	key        string
	prev, next *page
	// pins are the slots pinning it and until when: a few at most, but
	// for a prefix many conversations share (a slice: a page's map was
	// most of a pin's cost).
	pins  []pagePin
	until time.Duration // the latest of pins
	keep  uint64        // == L3Store.gen while a Put needs it
	// ARC order only (l3_arc.go): the list holding it (1: T1, 2: T2),
	// and when Touch last accessed it.
	list      uint8
	touchedAt time.Duration
	touchNo   uint64
}

type pagePin struct {
	slot  string
	until time.Duration
}

// slot is one pin: the pages it pinned (not their keys: a page evicted
// since is no longer listed, and its key looked up again would find
// another page, which this slot never pinned) and when it lapses.
type slot struct {
	keys  []*page
	until time.Duration
}

// setPin records slotName's pin on p until until.
func (p *page) setPin(slotName string, until time.Duration) {
	for i := range p.pins {
		if p.pins[i].slot == slotName {
			p.pins[i].until = until
			p.until = max(p.until, until)
			return
		}
	}
	p.pins = append(p.pins, pagePin{slotName, until})
	p.until = max(p.until, until)
}

// dropPin removes slotName's pin from p, and sets until to the latest
// of the others'.
func (p *page) dropPin(slotName string) {
	p.until = 0
	for i := 0; i < len(p.pins); i++ {
		if p.pins[i].slot == slotName {
			last := len(p.pins) - 1
			p.pins[i] = p.pins[last]
			p.pins[last] = pagePin{}
			p.pins = p.pins[:last]
			i--
			continue
		}
		p.until = max(p.until, p.pins[i].until)
	}
	if len(p.pins) == 0 {
		p.pins = nil
	}
}

// L3Stats counts what the store did.
type L3Stats struct {
	Inserts, Evictions int64
	// Pins and Releases count pin actions; PinnedKeys the (slot, key) pins
	// taken on resident pages, PinKeysMissing keys pinned but not resident.
	Pins, Releases             int64
	PinnedKeys, PinKeysMissing int64
	// PinsBroken counts live (slot, key) pins whose page was evicted.
	PinsBroken int64
	// PinsLapsed counts releases and replacements that found the slot's
	// pin already lapsed: it ran out before whatever ended it.
	PinsLapsed int64
}

// DefaultForgetLapsed is how long after its pin lapsed a slot is still
// known: an hour, four times the longest tool call the traces here hold
// and far beyond the few seconds between a pin's lapse and the turn it
// was for, which is what "pin lapsed" explains.
const DefaultForgetLapsed = time.Hour

// NewL3Store returns an empty store of capacity pages (at least 1).
func NewL3Store(capacity int) *L3Store {
	return &L3Store{cap: max(capacity, 1), m: make(map[string]*page, max(capacity, 1)), slots: map[string]*slot{}}
}

// Cap is the capacity in pages; Len the pages held.
func (s *L3Store) Cap() int { return s.cap }
func (s *L3Store) Len() int { return len(s.m) }

// Stats returns the counters so far.
func (s *L3Store) Stats() L3Stats { return s.stats }

// Contains reports whether key is resident (without touching it).
func (s *L3Store) Contains(key string) bool { _, ok := s.m[key]; return ok }

// Run returns how many of keys[from:] are resident in a row.
func (s *L3Store) Run(keys []string, from int) int {
	n := 0
	for _, k := range keys[min(from, len(keys)):] {
		if _, ok := s.m[k]; !ok {
			break
		}
		n++
	}
	return n
}

// Touch marks the resident keys as just used, keys[0] most recently.
func (s *L3Store) Touch(keys []string) { s.TouchAt(keys, 0) }

// TouchAt is Touch at simulated time now, which only the ARC order uses
// (a Put at the same instant does not access the pages again).
func (s *L3Store) TouchAt(keys []string, now time.Duration) {
	if s.arc != nil {
		s.arcTouch(keys, now)
		return
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if p, ok := s.m[keys[i]]; ok {
			s.moveFront(p)
		}
	}
}

// Put stores the first min(len(keys), Cap) keys (a write-through of a
// prompt's pages) as the most recent, keys[0] most of all, evicting as
// described on L3Store at simulated time now. It returns the keys
// inserted.
func (s *L3Store) Put(keys []string, now time.Duration) int {
	if s.arc != nil {
		// ARC holds no page for the Put: a prompt longer than the store
		// pushes its own pages out, as in the study.
		return s.arcPut(keys, now)
	}
	keys = keys[:min(len(keys), s.cap)]
	s.gen++
	for i := len(keys) - 1; i >= 0; i-- {
		if p, ok := s.m[keys[i]]; ok {
			s.moveFront(p)
			p.keep = s.gen
		}
	}
	inserted := 0
	for i := len(keys) - 1; i >= 0; i-- {
		if _, ok := s.m[keys[i]]; ok {
			continue
		}
		for len(s.m) >= s.cap {
			s.evict(now)
		}
		p := &page{key: keys[i], keep: s.gen}
		s.m[p.key] = p
		s.pushFront(p)
		inserted++
	}
	// Pages inserted after a held one sit in front of it; keep keys[0]
	// the most recent so a prompt's tail goes before its head.
	s.Touch(keys)
	s.stats.Inserts += int64(inserted)
	return inserted
}

// evict removes one page: the least recently used one without a live pin
// that the current Put does not hold, else the least recently used one
// the Put does not hold.
func (s *L3Store) evict(now time.Duration) {
	start := s.tail
	if s.scanned && s.scanGen == s.gen {
		start = s.scan
	}
	for p := start; p != nil; p = p.prev {
		if p.keep == s.gen || p.until > now {
			continue
		}
		s.scan, s.scanGen, s.scanned = p.prev, s.gen, true
		s.remove(p, now)
		return
	}
	// Every page is pinned or held: the least recently used pinned one
	// the Put does not hold goes (rare; a full walk).
	var fallback *page
	for p := s.tail; p != nil; p = p.prev {
		if p.keep != s.gen {
			fallback = p
			break
		}
	}
	if fallback == nil {
		fallback = s.tail // unreachable: a Put holds at most Cap-1 resident keys here
	}
	if fallback == s.scan {
		s.scanned = false // the walk would resume from a page no longer listed
	}
	s.remove(fallback, now)
}

func (s *L3Store) remove(p *page, now time.Duration) {
	for _, pp := range p.pins {
		if pp.until > now {
			s.stats.PinsBroken++
		}
	}
	if s.arc != nil {
		s.arc.list(p.list).unlink(p)
	} else {
		s.unlink(p)
	}
	delete(s.m, p.key)
	s.stats.Evictions++
}

// Pinned reports whether key is resident under a live pin at now.
func (s *L3Store) Pinned(key string, now time.Duration) bool {
	p, ok := s.m[key]
	return ok && p.until > now
}

// Pin soft-pins keys for ttl from now under slotName, replacing the
// slot's previous pin; ttl <= 0 releases the slot. Keys not resident are
// counted and ignored: Mooncake cannot pin what it does not hold.
func (s *L3Store) Pin(slotName string, keys []string, ttl, now time.Duration) {
	if ttl <= 0 {
		s.Release(slotName, now)
		return
	}
	s.unpin(slotName, now)
	s.stats.Pins++
	until := now + ttl
	sl := &slot{until: until}
	for _, k := range keys {
		p, ok := s.m[k]
		if !ok {
			s.stats.PinKeysMissing++
			continue
		}
		p.setPin(slotName, until)
		sl.keys = append(sl.keys, p)
		s.stats.PinnedKeys++
	}
	s.slots[slotName] = sl
	s.sincePrune++
	if s.sincePrune >= max(len(s.slots)/2, 1024) && !s.noPrune {
		s.pruneLapsed(now)
	}
}

// pruneLapsed drops the keys of every slot whose pin has lapsed by now,
// and the pages' record of it: a lapsed pin protects nothing (every test
// is until > now, and now only grows), but its keys would otherwise be
// held until the slot is pinned again or released, which for a
// conversation's last turn is never. The slot itself stays, keyless, for
// SlotUntil and the lapsed count at its release, until it has been
// lapsed for DefaultForgetLapsed. Amortised over the pins since the last
// prune, it costs O(1) a pin.
func (s *L3Store) pruneLapsed(now time.Duration) {
	s.sincePrune = 0
	for name, sl := range s.slots {
		if sl.until > now {
			continue
		}
		if sl.until+DefaultForgetLapsed <= now {
			delete(s.slots, name)
		}
		if sl.keys == nil {
			continue
		}
		for _, p := range sl.keys {
			p.dropPin(name)
		}
		sl.keys = nil
	}
}

// SlotUntil is when slotName's pin lapses (ok false: no such pin).
func (s *L3Store) SlotUntil(slotName string) (until time.Duration, ok bool) {
	sl, ok := s.slots[slotName]
	if !ok {
		return 0, false
	}
	return sl.until, true
}

// Release drops slotName's pin, if any, at now.
func (s *L3Store) Release(slotName string, now time.Duration) {
	s.stats.Releases++
	s.unpin(slotName, now)
}

func (s *L3Store) unpin(slotName string, now time.Duration) {
	sl, ok := s.slots[slotName]
	if !ok {
		return
	}
	if sl.until <= now {
		s.stats.PinsLapsed++
	}
	delete(s.slots, slotName)
	for _, p := range sl.keys {
		p.dropPin(slotName)
	}
}

func (s *L3Store) pushFront(p *page) {
	p.prev, p.next = nil, s.head
	if s.head != nil {
		s.head.prev = p
	}
	s.head = p
	if s.tail == nil {
		s.tail = p
	}
}

func (s *L3Store) unlink(p *page) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

func (s *L3Store) moveFront(p *page) {
	if s.head == p {
		return
	}
	s.unlink(p)
	s.pushFront(p)
}

// Order returns the resident keys, most recent first (for tests).
func (s *L3Store) Order() []string {
	if s.arc != nil {
		t1, t2 := s.arcOrder()
		return append(t1, t2...)
	}
	out := make([]string, 0, len(s.m))
	for p := s.head; p != nil; p = p.next {
		out = append(out, p.key)
	}
	return out
}
