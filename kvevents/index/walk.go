package index

// DefaultJump is Overlap's default probe stride (WithJump).
const DefaultJump = 32

// walkBatch is the number of lookups issued at once; they are
// independent, so their cache misses overlap.
const walkBatch = 32

// lookupMany sets out[i] to the bitmap of keys[i], len(keys) <=
// walkBatch: every probe's first lines are loaded before any probe runs.
func (p *page) lookupMany(keys []uint64, out []uint64) {
	var (
		ptrs  [2 * walkBatch]*uint64
		arrs  [walkBatch]*bitSlots
		homes [walkBatch]int
	)
	pp := ptrs[:0]
	for j, key := range keys {
		t, h := p.table(key)
		if d := t.cur.Load(); d != nil {
			arrs[j], homes[j] = d, homeSlot(h, d.n)
			pp = append(pp, &d.s[homes[j]].key, &d.s[min(homes[j]+lookahead, d.n)].key)
		} else {
			arrs[j] = nil
		}
	}
	loadAll(pp)
	for j, key := range keys {
		out[j] = arrs[j].lookupFrom(key, homes[j])
	}
}

// walk narrows alive (a bitmap of slots) along seq and calls lost(bits,
// depth) for the slots whose first missing block is seq[depth], depth > 0
// (a slot missing seq[0] has no overlap and is dropped silently). It
// returns the slots holding all of seq.
//
// With jump > 1 it looks up seq[0] and then only every jump-th block, and
// scans the blocks between two probes one by one only when the later
// probe lost slots. That is exact when each slot's blocks are
// prefix-closed (holding a block implies holding its parent), the
// property Dynamo's RadixTree.find_matches also relies on: engines evict
// leaves first (vLLM frees a request's blocks tail first, SGLang and
// TensorRT-LLM evict radix-tree leaves) and the index, when full, drops
// new blocks rather than old ones. A slot missing a block between two
// probes that both find it is credited through that hole. jump <= 1 looks
// up every block and stops each slot at its first missing block, holes
// or not.
func (p *page) walk(seq []uint64, alive uint64, jump int, lost func(bits uint64, depth int)) uint64 {
	if jump <= 1 || len(seq) <= 2 {
		return p.scan(seq, 0, alive, 4, lost)
	}
	var (
		keys [walkBatch]uint64
		at   [walkBatch]int
		got  [walkBatch]uint64
	)
	// Most prompts either miss at once or run long: the first round
	// probes block 0 and three strides, later rounds whole batches.
	first := true
	// Probes sit at blocks 0, jump-1, 2*jump-1, ... and the last.
	stride := func(q int) int { return min(((q+1)/jump+1)*jump-1, len(seq)-1) }
	next := 0 // every slot in alive holds seq[:next]
	for next < len(seq) && alive != 0 {
		k, room := 0, len(keys)
		if first {
			room, first = 4, false
		}
		q := 0
		if next > 0 {
			q = stride(next - 1)
		}
		for k < room {
			at[k], keys[k] = q, seq[q]
			k++
			if q == len(seq)-1 {
				break
			}
			q = stride(q)
		}
		p.lookupMany(keys[:k], got[:k])
		for j := range k {
			q := at[j]
			if alive&^got[j] != 0 {
				if q == 0 {
					alive &= got[j]
				} else {
					// Slots lost by the probe at q lost their first block
					// somewhere in [next, q]: find where.
					alive = p.scan(seq[next:q+1], next, alive, walkBatch, lost)
				}
				if alive == 0 {
					return 0
				}
			}
			next = q + 1
		}
	}
	return alive
}

// scan narrows alive along seq, block by block; seq starts at depth
// from of the prompt and the first lookup batch has batch blocks.
func (p *page) scan(seq []uint64, from int, alive uint64, batch int, lost func(bits uint64, depth int)) uint64 {
	var got [walkBatch]uint64
	for i := 0; i < len(seq) && alive != 0; {
		keys := seq[i:min(i+batch, len(seq))]
		batch = walkBatch
		p.lookupMany(keys, got[:len(keys)])
		for j := range keys {
			if gone := alive &^ got[j]; gone != 0 {
				if d := from + i + j; d > 0 {
					lost(gone, d)
				}
				if alive &= got[j]; alive == 0 {
					return 0
				}
			}
		}
		i += len(keys)
	}
	return alive
}
