package schemas

// Ingest decodes one RouterEvent per message and copies it into the
// index's own event at once (kvevents.FromRouterEvent), so the decoded
// value is garbage a microsecond later. DecodeRouterEventInto lets such a
// caller decode each message into the memory of the previous one: the
// store/remove data, the block arrays and the parent hash, five
// allocations per event otherwise.

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

func (r *routerReuse) storeData() *KvCacheStoreData   { return take(&r.store) }
func (r *routerReuse) removeData() *KvCacheRemoveData { return take(&r.remove) }
func (r *routerReuse) parentHash() *BlockHash         { return take(&r.parent) }
func (r *routerReuse) startPosition() *uint32         { return take(&r.start) }

// storedBlocks returns an empty, non-nil slice with room for n blocks.
func (r *routerReuse) storedBlocks(n int) []StoredBlock { return takeSlice(&r.blocks, n) }

// blockHashes returns an empty, non-nil slice with room for n hashes.
func (r *routerReuse) blockHashes(n int) []BlockHash { return takeSlice(&r.removed, n) }

// take hands out *p zeroed, once (then *p is nil), or a new T.
func take[T any](p **T) *T {
	v := *p
	if v == nil {
		return new(T)
	}
	*p = nil
	var zero T
	*v = zero
	return v
}

// takeSlice hands out *p emptied, once, when it has room for n elements;
// else a new slice with that room. Never nil, as make's.
func takeSlice[T any](p *[]T, n int) []T {
	v := *p
	if v == nil || cap(v) < n {
		return make([]T, 0, n)
	}
	*p = nil
	return v[:0]
}
