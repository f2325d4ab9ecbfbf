package schemas

import "unicode/utf8"

// The general fast path (router_json.go) reads any member order and any
// whitespace, at the price of a key read, a switch and a closure call per
// member: half of its 0.9 µs on a 4-block event (issue 17). But Dynamo's
// serde_json, and encoding/json in our own tools, write one shape only:
// compact, members in declaration order (worker_id, storage_tier,
// residency_domain, event; event_id, data, dp_rank; parent_hash,
// start_position, blocks; block_hash, tokens_hash, mm_extra_info). So
// compactRouterEvent first matches that shape key by key as literals,
// optional members where they may be missing; at the first byte that
// differs it reports false and the general fast path starts over (which
// in turn leaves anything else to encoding/json). It accepts a subset of
// what the general path accepts, with the same values, so
// FuzzFastRouterEventJSON's comparison with encoding/json covers it too.

// compactRouterEvent decodes data, in the compact declaration-order shape
// above, into ev, which it expects zeroed, taking memory from p.reuse; or
// reports false, with ev and p.reuse to be discarded.
func (p *jsonScan) compactRouterEvent(maxTokens int, ev *RouterEvent) bool {
	var ok bool
	if !p.lit(`{"worker_id":`) {
		return false
	}
	if ev.WorkerID, ok = p.uint64(); !ok {
		return false
	}
	if p.lit(`,"storage_tier":`) {
		if ev.StorageTier, ok = p.tier(); !ok {
			return false
		}
	}
	if p.lit(`,"residency_domain":`) {
		// Not a RouterEvent field (see fastRouterEventJSONReuse).
		if s, ok := p.plainBytes(); !ok || !utf8.Valid(s) {
			return false
		}
	}
	if !p.lit(`,"event":{"event_id":`) {
		return false
	}
	if ev.Event.EventID, ok = p.uint64(); !ok {
		return false
	}
	switch {
	case p.lit(`,"data":{"stored":{"parent_hash":`):
		s := p.reuse.storeData()
		if !p.compactStoreData(maxTokens, s) {
			return false
		}
		ev.Event.Data = KvCacheEventData{Kind: KindStored, Stored: s}
	case p.lit(`,"data":{"removed":{"block_hashes":[`):
		r := p.reuse.removeData()
		if !p.compactRemoveData(maxTokens, r) {
			return false
		}
		ev.Event.Data = KvCacheEventData{Kind: KindRemoved, Removed: r}
	default:
		return false // cleared, or another shape: the general path's
	}
	if !p.lit(`}}`) { // the variant's object, then data's
		return false
	}
	if p.lit(`,"dp_rank":`) {
		v, ok := p.uint64()
		if !ok || v > 1<<32-1 {
			return false
		}
		ev.Event.DpRank = uint32(v)
	}
	return p.lit(`}}`) && p.end()
}

// compactStoreData reads a stored variant's members after `"parent_hash":`
// up to, not including, its closing '}'.
func (p *jsonScan) compactStoreData(maxTokens int, s *KvCacheStoreData) bool {
	if !p.lit("null") {
		h := p.reuse.parentHash()
		var ok bool
		if *h, ok = p.blockHash(); !ok {
			return false
		}
		s.ParentHash = h
	}
	if p.lit(`,"start_position":`) && !p.lit("null") {
		v, ok := p.uint64()
		if !ok || v > 1<<32-1 {
			return false
		}
		sp := p.reuse.startPosition()
		*sp = uint32(v)
		s.StartPosition = sp
	}
	if !p.lit(`,"blocks":[`) {
		return false
	}
	out := p.reuse.storedBlocks(min(maxTokens, p.countUntil('{', ']')))
	if p.eat(']') {
		s.Blocks = out
		return true
	}
	for {
		if len(out) == maxTokens || !p.lit(`{"block_hash":`) {
			return false
		}
		bh, ok := p.blockHash()
		if !ok || !p.lit(`,"tokens_hash":`) {
			return false
		}
		th, ok := p.blockHash()
		if !ok {
			return false
		}
		p.lit(`,"mm_extra_info":null`) // absent or null; anything else fails the '}'
		if !p.eat('}') {
			return false
		}
		out = append(out, StoredBlock{BlockHash: bh, TokensHash: th})
		if p.eat(']') {
			s.Blocks = out
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

// compactRemoveData reads a removed variant's hashes after
// `"block_hashes":[` up to, not including, its closing '}'.
func (p *jsonScan) compactRemoveData(maxTokens int, r *KvCacheRemoveData) bool {
	out := p.reuse.blockHashes(min(maxTokens, p.countUntil(',', ']')+1))
	if p.eat(']') {
		r.BlockHashes = out
		return true
	}
	for {
		if len(out) == maxTokens {
			return false
		}
		h, ok := p.blockHash()
		if !ok {
			return false
		}
		out = append(out, h)
		if p.eat(']') {
			r.BlockHashes = out
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}
