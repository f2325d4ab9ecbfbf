package schemas

import "unicode/utf8"

// The general fast path (router_json.go) reads any member order and any
// whitespace, at the price of a key read, a switch and a closure call per
// member: half of its 0.9 µs on a 4-block event. But Dynamo's
// serde_json, and encoding/json in our own tools, write one shape only:
// compact, members in declaration order (worker_id, storage_tier,
// residency_domain, event; event_id, data, dp_rank; parent_hash,
// start_position, blocks; block_hash, tokens_hash, mm_extra_info: the
// structs' order in ai-dynamo/dynamo lib/kv-router/src/protocols.rs at
// 038eab23a6b6e9b6391de6640f4f69d4c2726681, serde's output order). So
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
	if !p.litWorkerID() {
		return false
	}
	if ev.WorkerID, ok = p.uint64(); !ok {
		return false
	}
	if p.litStorageTier() {
		if ev.StorageTier, ok = p.tier(); !ok {
			return false
		}
	}
	if p.litResidency() && p.litDomain() {
		// Not a RouterEvent field (see fastRouterEventJSONReuse).
		if s, ok := p.plainBytes(); !ok || !utf8.Valid(s) {
			return false
		}
	}
	if !p.litEvent() || !p.litEventID() {
		return false
	}
	if ev.Event.EventID, ok = p.uint64(); !ok {
		return false
	}
	if !p.litData() {
		return false
	}
	switch {
	case p.litStored() && p.litParentHash():
		s := p.reuse.storeData()
		if !p.compactStoreData(maxTokens, s) {
			return false
		}
		ev.Event.Data = KvCacheEventData{Kind: KindStored, Stored: s}
	case p.litRemoved() && p.litBlockHashes():
		r := p.reuse.removeData()
		if !p.compactRemoveData(maxTokens, r) {
			return false
		}
		ev.Event.Data = KvCacheEventData{Kind: KindRemoved, Removed: r}
	default:
		return false // cleared, or another shape: the general path's
	}
	if !p.litClose2() { // the variant's object, then data's
		return false
	}
	if p.litDpRank() {
		v, ok := p.uint64()
		if !ok || v > 1<<32-1 {
			return false
		}
		ev.Event.DpRank = uint32(v)
	}
	return p.litClose2() && p.end()
}

// compactStoreData reads a stored variant's members after `"parent_hash":`
// up to, not including, its closing '}'.
func (p *jsonScan) compactStoreData(maxTokens int, s *KvCacheStoreData) bool {
	if !p.litNull() {
		h := p.reuse.parentHash()
		var ok bool
		if *h, ok = p.blockHash(); !ok {
			return false
		}
		s.ParentHash = h
	}
	if p.litStart() && p.litPosition() && !p.litNull() {
		v, ok := p.uint64()
		if !ok || v > 1<<32-1 {
			return false
		}
		sp := p.reuse.startPosition()
		*sp = uint32(v)
		s.StartPosition = sp
	}
	if !p.litBlocks() {
		return false
	}
	out := p.reuse.storedBlocks(p.room(cap(p.reuse.blocks), maxTokens, '{'))
	if p.eat(']') {
		s.Blocks = out
		return true
	}
	for {
		if len(out) == maxTokens || !p.litBlockHash() {
			return false
		}
		bh, ok := p.blockHash()
		if !ok || !p.litTokensHash() {
			return false
		}
		th, ok := p.blockHash()
		if !ok {
			return false
		}
		if p.litMM() && !p.litInfoNull() { // absent or null
			return false
		}
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
	out := p.reuse.blockHashes(p.room(cap(p.reuse.removed), maxTokens, ','))
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

// The literals compactRouterEvent matches, in pieces of at most 16
// bytes, each read by its own method: compared with a constant of up to
// 16 bytes, a string compiles to two word compares (cmd/compile's
// walkCompareString), where lit(s) or a longer constant calls memequal.
const (
	litWorkerID    = `{"worker_id":`
	litStorageTier = `,"storage_tier":`
	litResidency   = `,"residency`
	litDomain      = `_domain":`
	litEvent       = `,"event":{`
	litEventID     = `"event_id":`
	litData        = `,"data":{`
	litStored      = `"stored":{`
	litParentHash  = `"parent_hash":`
	litRemoved     = `"removed":{`
	litBlockHashes = `"block_hashes":[`
	litClose2      = `}}`
	litDpRank      = `,"dp_rank":`
	litNull        = `null`
	litStart       = `,"start_`
	litPosition    = `position":`
	litBlocks      = `,"blocks":[`
	litBlockHash   = `{"block_hash":`
	litTokensHash  = `,"tokens_hash":`
	litMM          = `,"mm_extra_`
	litInfoNull    = `info":null`
)

func (p *jsonScan) litWorkerID() bool {
	return p.skipIf(len(litWorkerID), string(p.ahead(len(litWorkerID))) == litWorkerID)
}
func (p *jsonScan) litStorageTier() bool {
	return p.skipIf(len(litStorageTier), string(p.ahead(len(litStorageTier))) == litStorageTier)
}
func (p *jsonScan) litResidency() bool {
	return p.skipIf(len(litResidency), string(p.ahead(len(litResidency))) == litResidency)
}
func (p *jsonScan) litDomain() bool {
	return p.skipIf(len(litDomain), string(p.ahead(len(litDomain))) == litDomain)
}
func (p *jsonScan) litEvent() bool {
	return p.skipIf(len(litEvent), string(p.ahead(len(litEvent))) == litEvent)
}
func (p *jsonScan) litEventID() bool {
	return p.skipIf(len(litEventID), string(p.ahead(len(litEventID))) == litEventID)
}
func (p *jsonScan) litData() bool {
	return p.skipIf(len(litData), string(p.ahead(len(litData))) == litData)
}
func (p *jsonScan) litStored() bool {
	return p.skipIf(len(litStored), string(p.ahead(len(litStored))) == litStored)
}
func (p *jsonScan) litParentHash() bool {
	return p.skipIf(len(litParentHash), string(p.ahead(len(litParentHash))) == litParentHash)
}
func (p *jsonScan) litRemoved() bool {
	return p.skipIf(len(litRemoved), string(p.ahead(len(litRemoved))) == litRemoved)
}
func (p *jsonScan) litBlockHashes() bool {
	return p.skipIf(len(litBlockHashes), string(p.ahead(len(litBlockHashes))) == litBlockHashes)
}
func (p *jsonScan) litClose2() bool {
	return p.skipIf(len(litClose2), string(p.ahead(len(litClose2))) == litClose2)
}
func (p *jsonScan) litDpRank() bool {
	return p.skipIf(len(litDpRank), string(p.ahead(len(litDpRank))) == litDpRank)
}
func (p *jsonScan) litNull() bool {
	return p.skipIf(len(litNull), string(p.ahead(len(litNull))) == litNull)
}
func (p *jsonScan) litStart() bool {
	return p.skipIf(len(litStart), string(p.ahead(len(litStart))) == litStart)
}
func (p *jsonScan) litPosition() bool {
	return p.skipIf(len(litPosition), string(p.ahead(len(litPosition))) == litPosition)
}
func (p *jsonScan) litBlocks() bool {
	return p.skipIf(len(litBlocks), string(p.ahead(len(litBlocks))) == litBlocks)
}
func (p *jsonScan) litBlockHash() bool {
	return p.skipIf(len(litBlockHash), string(p.ahead(len(litBlockHash))) == litBlockHash)
}
func (p *jsonScan) litTokensHash() bool {
	return p.skipIf(len(litTokensHash), string(p.ahead(len(litTokensHash))) == litTokensHash)
}
func (p *jsonScan) litMM() bool { return p.skipIf(len(litMM), string(p.ahead(len(litMM))) == litMM) }
func (p *jsonScan) litInfoNull() bool {
	return p.skipIf(len(litInfoNull), string(p.ahead(len(litInfoNull))) == litInfoNull)
}

// room is the capacity to ask of a reused array of capacity c for the
// array that starts here: c when there is one (appends grow it should
// this array be longer), else the count of elements up to the ']' (each
// starts at elem, '{'; or, in a list of numbers, each but the last ends
// at elem, ','), at most maxTokens. Counting scans to the ']', a tenth of
// a 4-block event's decode, so only a first decode pays it.
func (p *jsonScan) room(c, maxTokens int, elem byte) int {
	if c > 0 {
		return c
	}
	k := p.countUntil(elem, ']')
	if elem == ',' {
		k++
	}
	return min(maxTokens, k)
}

// ahead is the next n bytes, or nil when fewer are left.
func (p *jsonScan) ahead(n int) []byte {
	if len(p.b)-p.i < n {
		return nil
	}
	return p.b[p.i : p.i+n]
}

// skipIf steps over n bytes when ok, and returns ok.
func (p *jsonScan) skipIf(n int, ok bool) bool {
	if ok {
		p.i += n
	}
	return ok
}
