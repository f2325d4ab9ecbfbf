package schemas

// Ingest decodes one RouterEvent per message and copies it into the
// index's own event at once (kvevents.FromRouterEvent), so the decoded
// value is garbage a microsecond later. DecodeRouterEventInto lets such a
// caller decode each message into the memory of the previous one: the
// store/remove data, the block arrays and the parent hash, five
// allocations per event otherwise (issue 17).

// DecodeRouterEventInto is DecodeRouterEvent into *ev, reusing the
// memory ev points to (its stored or removed data, their arrays, the
// parent hash and start position): the caller must not keep any of it
// from a previous decode. The result and errors are DecodeRouterEvent's;
// on error *ev is unspecified.
func (l Limits) DecodeRouterEventInto(data []byte, ev *RouterEvent) error {
	const kind = "router_event"
	l = l.withDefaults()
	r := reuseOf(ev)
	*ev = RouterEvent{}
	if len(data) > l.MaxBytes || l.MaxDepth < fastRouterDepth ||
		!fastRouterEventJSONReuse(data, l.MaxTokens, ev, r) {
		*ev = RouterEvent{} // encoding/json would keep what the fast path set
		if err := l.decodeJSON(kind, data, ev); err != nil {
			return err
		}
	}
	return l.checkRouterEvent(ev)
}

// routerReuse is the memory of a previous decode, handed out once each.
// Its zero value allocates.
type routerReuse struct {
	store   *KvCacheStoreData
	remove  *KvCacheRemoveData
	parent  *BlockHash
	start   *uint32
	blocks  []StoredBlock
	removed []BlockHash
}

func reuseOf(ev *RouterEvent) routerReuse {
	var r routerReuse
	if s := ev.Event.Data.Stored; s != nil {
		r.store, r.parent, r.start, r.blocks = s, s.ParentHash, s.StartPosition, s.Blocks
	}
	if rm := ev.Event.Data.Removed; rm != nil {
		r.remove, r.removed = rm, rm.BlockHashes
	}
	return r
}

func (r *routerReuse) storeData() *KvCacheStoreData {
	if r.store == nil {
		return new(KvCacheStoreData)
	}
	s := r.store
	r.store = nil
	*s = KvCacheStoreData{}
	return s
}

func (r *routerReuse) removeData() *KvCacheRemoveData {
	if r.remove == nil {
		return new(KvCacheRemoveData)
	}
	rm := r.remove
	r.remove = nil
	*rm = KvCacheRemoveData{}
	return rm
}

func (r *routerReuse) parentHash() *BlockHash {
	if r.parent == nil {
		return new(BlockHash)
	}
	h := r.parent
	r.parent = nil
	return h
}

func (r *routerReuse) startPosition() *uint32 {
	if r.start == nil {
		return new(uint32)
	}
	sp := r.start
	r.start = nil
	return sp
}

// storedBlocks returns an empty, non-nil slice with room for n blocks.
func (r *routerReuse) storedBlocks(n int) []StoredBlock {
	if r.blocks == nil || cap(r.blocks) < n {
		return make([]StoredBlock, 0, n)
	}
	b := r.blocks[:0]
	r.blocks = nil
	return b
}

// blockHashes returns an empty, non-nil slice with room for n hashes.
func (r *routerReuse) blockHashes(n int) []BlockHash {
	if r.removed == nil || cap(r.removed) < n {
		return make([]BlockHash, 0, n)
	}
	h := r.removed[:0]
	r.removed = nil
	return h
}
