package schemas

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// Decoding a Dynamo RouterEvent with encoding/json costs 20-40 µs: the
// tagged event data is unmarshalled three times over (the whole event, a
// map of raw variants, the variant), each pass re-validating its bytes.
// fastRouterEventJSON decodes the shapes Dynamo publishes — known keys
// once each, integers without fraction or exponent, no escapes, "cleared"
// as a bare string or {"cleared": null | {}}, and the two fields Dynamo
// writes that RouterEvent ignores: residency_domain as a plain string and
// a block's "mm_extra_info": null — in one pass. Anything else
// returns ok=false and the caller decodes with encoding/json, so accepted
// values and error reasons stay exactly the slow path's
// (FuzzFastRouterEventJSON checks both directions of that claim).

// fastRouterDepth is how deep the accepted shapes nest (event, data,
// stored, blocks, block): under a smaller MaxDepth the slow path decides.
const fastRouterDepth = 6

// fastRouterEventJSON decodes data into ev, or reports false and leaves ev
// to be overwritten. On true the slow path would return the same value
// and no error, with arrays of at most maxTokens elements.
func fastRouterEventJSON(data []byte, maxTokens int, ev *RouterEvent) bool {
	return fastRouterEventJSONReuse(data, maxTokens, ev, routerReuse{})
}

// fastRouterEventJSONReuse is fastRouterEventJSON taking what it
// allocates from r first (its zero value: allocate everything).
// It tries the compact declaration-order shape first (router_compact.go);
// ev must be zero.
func fastRouterEventJSONReuse(data []byte, maxTokens int, ev *RouterEvent, r routerReuse) bool {
	if c := (jsonScan{b: data, reuse: r}); c.compactRouterEvent(maxTokens, ev) {
		return true
	}
	*ev = RouterEvent{} // what the compact path set, in memory taken from r again below
	p := jsonScan{b: data, reuse: r}
	p.ws()
	// Without event data the slow path fails with "missing event data".
	return p.object(func(key []byte) (bit uint8, ok bool) {
		ok = true // a case that reads nothing (a null) has read its value
		switch string(key) {
		case "worker_id":
			bit = 1
			ev.WorkerID, ok = p.uint64()
		case "storage_tier":
			bit = 2
			ev.StorageTier, ok = p.tier()
		case "event":
			bit = 4
			ok = p.kvCacheEvent(maxTokens, &ev.Event)
		case "residency_domain":
			// Dynamo writes it ("worker", "cache_owner"); RouterEvent has
			// no such field, so the slow path ignores it too.
			bit = 8
			var s []byte
			s, ok = p.plainBytes()
			ok = ok && utf8.Valid(s)
		}
		return bit, ok
	}) && ev.Event.Data.Kind != 0 && p.end()
}

func (p *jsonScan) kvCacheEvent(maxTokens int, e *KvCacheEvent) bool {
	return p.object(func(key []byte) (bit uint8, ok bool) {
		ok = true // a case that reads nothing (a null) has read its value
		switch string(key) {
		case "event_id":
			bit = 1
			e.EventID, ok = p.uint64()
		case "data":
			bit = 2
			ok = p.eventData(maxTokens, &e.Data)
		case "dp_rank":
			bit = 4
			var v uint64
			v, ok = p.uint64()
			ok = ok && v <= 1<<32-1
			e.DpRank = uint32(v)
		}
		return bit, ok
	})
}

// eventData reads serde's externally tagged variant.
func (p *jsonScan) eventData(maxTokens int, d *KvCacheEventData) bool {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		s, ok := p.plainBytes()
		if !ok || string(s) != "cleared" {
			return false
		}
		*d = KvCacheEventData{Kind: KindCleared}
		return true
	}
	if !p.eat('{') {
		return false
	}
	key, done, ok := p.member(true)
	if !ok || done {
		return false
	}
	switch string(key) {
	case "stored":
		s := p.reuse.storeData()
		ok = p.storeData(maxTokens, s)
		*d = KvCacheEventData{Kind: KindStored, Stored: s}
	case "removed":
		r := p.reuse.removeData()
		ok = p.removeData(maxTokens, r)
		*d = KvCacheEventData{Kind: KindRemoved, Removed: r}
	case "cleared":
		// The slow path accepts any value here; these two are the ones
		// serde writes for a unit variant in map form.
		ok = p.lit("null") || (p.eat('{') && p.ws0() && p.eat('}'))
		*d = KvCacheEventData{Kind: KindCleared}
	default:
		return false
	}
	if !ok {
		return false
	}
	// Exactly one variant: a second key is the slow path's to judge.
	p.ws()
	return p.eat('}')
}

func (p *jsonScan) storeData(maxTokens int, s *KvCacheStoreData) bool {
	return p.object(func(key []byte) (bit uint8, ok bool) {
		ok = true // a case that reads nothing (a null) has read its value
		switch string(key) {
		case "parent_hash":
			bit = 1
			if !p.lit("null") {
				h := p.reuse.parentHash()
				*h, ok = p.blockHash()
				s.ParentHash = h
			}
		case "start_position":
			bit = 2
			if !p.lit("null") {
				var v uint64
				v, ok = p.uint64()
				ok = ok && v <= 1<<32-1
				sp := p.reuse.startPosition()
				*sp = uint32(v)
				s.StartPosition = sp
			}
		case "blocks":
			bit = 4
			s.Blocks, ok = p.storedBlocks(maxTokens)
		}
		return bit, ok
	})
}

func (p *jsonScan) storedBlocks(maxTokens int) ([]StoredBlock, bool) {
	if !p.eat('[') {
		return nil, false
	}
	out := p.reuse.storedBlocks(min(maxTokens, p.countUntil('{', ']')))
	for first := true; ; first = false {
		done, ok := p.element(first)
		if !ok || (!done && len(out) == maxTokens) {
			return nil, false
		}
		if done {
			return out, true
		}
		var b StoredBlock
		if !p.storedBlock(&b) {
			return nil, false
		}
		out = append(out, b)
	}
}

func (p *jsonScan) storedBlock(b *StoredBlock) bool {
	return p.object(func(key []byte) (bit uint8, ok bool) {
		ok = true // a case that reads nothing (a null) has read its value
		switch string(key) {
		case "block_hash":
			bit = 1
			b.BlockHash, ok = p.blockHash()
		case "tokens_hash":
			bit = 2
			b.TokensHash, ok = p.blockHash()
		case "mm_extra_info":
			// Dynamo writes null for every text-only block; StoredBlock
			// has no such field. Multimodal info goes the slow way.
			bit = 4
			ok = p.lit("null")
		}
		return bit, ok
	})
}

func (p *jsonScan) removeData(maxTokens int, r *KvCacheRemoveData) bool {
	if !p.eat('{') {
		return false
	}
	key, done, ok := p.member(true)
	if !ok {
		return false
	}
	if done {
		return true
	}
	if string(key) != "block_hashes" || !p.eat('[') {
		return false
	}
	// Each hash but the last ends at a comma.
	out := p.reuse.blockHashes(min(maxTokens, p.countUntil(',', ']')+1))
	for first := true; ; first = false {
		done, ok := p.element(first)
		if !ok || (!done && len(out) == maxTokens) {
			return false
		}
		if done {
			break
		}
		h, ok := p.blockHash()
		if !ok {
			return false
		}
		out = append(out, h)
	}
	r.BlockHashes = out
	p.ws()
	return p.eat('}')
}

// member reads the next member's key and colon of an object whose '{' is
// read, or its closing '}' (done).
func (p *jsonScan) member(first bool) (key []byte, done, ok bool) {
	p.ws()
	if p.eat('}') {
		return nil, true, true
	}
	if !first {
		if !p.eat(',') {
			return nil, false, false
		}
		p.ws()
	}
	key, ok = p.plainBytes()
	p.ws()
	if !ok || !p.eat(':') {
		return nil, false, false
	}
	p.ws()
	return key, false, true
}

// object reads an object, '{' included, handing each member's key to
// field, which reads the value and returns the member's bit (0: a key we
// do not take) and whether the value was read. An unknown or repeated key
// or a bad value gives false: the slow path decides those.
func (p *jsonScan) object(field func(key []byte) (bit uint8, ok bool)) bool {
	if !p.eat('{') {
		return false
	}
	var seen uint8
	for first := true; ; first = false {
		key, done, ok := p.member(first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		bit, ok := field(key)
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// element steps to the next element of an array whose '[' is read, or
// past its closing ']' (done).
func (p *jsonScan) element(first bool) (done, ok bool) {
	p.ws()
	if p.eat(']') {
		return true, true
	}
	if !first {
		if !p.eat(',') {
			return false, false
		}
		p.ws()
	}
	return false, true
}

// plainBytes is plainString without the copy.
func (p *jsonScan) plainBytes() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	// Locals, not p.i: the loop then keeps its index in a register.
	b, start := p.b, p.i
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return b[start:i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// lit reads the literal s if it comes next.
func (p *jsonScan) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// ws0 is ws for use inside a boolean expression.
func (p *jsonScan) ws0() bool { p.ws(); return true }

// countUntil counts c from i to the first stop: a capacity hint, exact
// for the shapes this file accepts.
func (p *jsonScan) countUntil(c, stop byte) int {
	rest := p.b[p.i:]
	if end := bytes.IndexByte(rest, stop); end >= 0 {
		rest = rest[:end]
	}
	return bytes.Count(rest, []byte{c})
}

func (p *jsonScan) tier() (StorageTier, bool) {
	s, ok := p.plainBytes()
	if !ok {
		return "", false
	}
	// An unknown tier fails the slow path; "" means device there too.
	switch string(s) {
	case "":
		return "", true
	case "device":
		return TierDevice, true
	case "host_pinned":
		return TierHostPinned, true
	case "disk":
		return TierDisk, true
	case "external":
		return TierExternal, true
	}
	return "", false
}

// uint64 reads a JSON integer without sign that fits 64 bits. A block
// hash has 19 or 20 digits: the first 16 are read 8 at a time (eight
// digits checked and combined in a few word operations, as in
// Lemire's "parsing eight digits" trick), the rest one by one.
func (p *jsonScan) uint64() (uint64, bool) {
	b, i := p.b, p.i
	start := i
	var v uint64
	// Two chunks are 16 digits, which cannot overflow.
	for k := 0; k < 2 && len(b)-i >= 8; k++ {
		x := binary.LittleEndian.Uint64(b[i:])
		if !eightDigits(x) {
			break
		}
		v = v*1e8 + eightDigitsValue(x)
		i += 8
	}
	// 19 digits cannot overflow; only a 20th needs the check.
	for i < len(b) && b[i]-'0' <= 9 && i-start < 19 {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	if i < len(b) && b[i]-'0' <= 9 {
		d := uint64(b[i] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
		i++
	}
	n := i - start
	if n == 0 || (n > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) && (b[i]-'0' <= 9 || b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	p.i = i
	return v, true
}

// eightDigits reports whether the 8 bytes of x (little-endian) are all
// ASCII digits: each byte's high nibble is 3, and adding 6 to it does not
// carry into the high nibble (so its low nibble is at most 9).
func eightDigits(x uint64) bool {
	return (x&0xf0f0f0f0f0f0f0f0)|((x+0x0606060606060606)&0xf0f0f0f0f0f0f0f0)>>4 == 0x3333333333333333
}

// eightDigitsValue is the number the 8 ASCII digits of x spell, the
// first byte the most significant: pairs, then fours, then all eight are
// combined, each step one multiply-add per lane.
func eightDigitsValue(x uint64) uint64 {
	x -= 0x3030303030303030
	x = x*10 + x>>8 // each even byte: two digits
	x = ((x&0x000000ff000000ff)*(100+1000000<<32) + (x>>16&0x000000ff000000ff)*(1+10000<<32)) >> 32
	return x
}

// blockHash reads what BlockHash.UnmarshalJSON accepts: an unsigned or a
// negative integer that fits 64 bits, negatives as two's complement.
func (p *jsonScan) blockHash() (BlockHash, bool) {
	neg := p.eat('-')
	v, ok := p.uint64()
	switch {
	case !ok:
		return 0, false
	case !neg:
		return BlockHash(v), true
	case v > 1<<63:
		return 0, false
	}
	return BlockHash(-v), true
}

// fastRouterJSON decodes with fastRouterEventJSON when the limits allow
// every shape it accepts; the checks are decodeJSON's. It needs no UTF-8
// check of the whole message: outside strings it accepts only ASCII, and
// every string but residency_domain (checked) is one of its ASCII names.
func (l Limits) fastRouterJSON(data []byte, ev *RouterEvent) bool {
	if len(data) > l.MaxBytes || l.MaxDepth < fastRouterDepth {
		return false
	}
	return fastRouterEventJSON(data, l.MaxTokens, ev)
}
