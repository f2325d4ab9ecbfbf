package index

import (
	"errors"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// ErrUnknownTier means an event names a storage tier that is none of
// Dynamo's (device, host_pinned, disk, external). The event is ignored
// and counted in Stats.UnknownTier; it is not malformed, since a newer
// engine or Dynamo may add a tier this index does not rank.
var ErrUnknownTier = errors.New("index: unknown storage tier")

// LowerOverlap is how far a (worker, dp rank)'s prompt prefix extends
// past its device overlap on each lower tier, in blocks. Each tier
// continues where the one before it stopped, in Dynamo's order host_pinned,
// disk, external, so device + HostPinned + Disk + External never exceeds
// the prompt's blocks.
type LowerOverlap struct {
	HostPinned int
	Disk       int
	External   int
}

// lowerTierOrder is the order Dynamo's query_lower_tiers walks the tiers
// below device (lib/kv-router/src/indexer/lower_tier_indexers.rs,
// lower_tier_query_order, ai-dynamo/dynamo commit
// 1783f723be1af5717830f460651d23eb75595009).
var lowerTierOrder = [...]schemas.StorageTier{schemas.TierHostPinned, schemas.TierDisk, schemas.TierExternal}

// lowerSeqs counts, per lower tier, the worker's external hashes holding
// each sequence hash, so a prompt's sequence hashes can be looked up on
// that tier. It mirrors st.other (external -> sequence hash), from which
// a snapshot load rebuilds it, so the snapshot format does not change.
type lowerSeqs map[uint64]uint32

// lowerPut records that ext now maps to seq on tier (m is that tier's
// external table, before the put), keeping st.lower in step.
func (st *workerState) lowerPut(tier schemas.StorageTier, m *extTable, ext, seq uint64) (added bool) {
	old, had := m.get(ext)
	if had && old == seq {
		return false
	}
	s := st.lowerFor(tier)
	if had {
		s.dec(old)
	} else {
		st.lowerN.Add(1)
	}
	s[seq]++
	m.put(ext, seq)
	return !had
}

// lowerRemoved records that seq (of a removed external hash) left tier.
func (st *workerState) lowerRemoved(tier schemas.StorageTier, seq uint64) {
	if s := st.lower[tier]; s != nil {
		s.dec(seq)
		st.lowerN.Add(-1)
	}
}

// lowerCleared forgets tier; n is the number of external hashes it held.
func (st *workerState) lowerCleared(tier schemas.StorageTier, n int) {
	delete(st.lower, tier)
	st.lowerN.Add(-int64(n))
}

func (st *workerState) lowerFor(tier schemas.StorageTier) lowerSeqs {
	s := st.lower[tier]
	if s == nil {
		if st.lower == nil {
			st.lower = make(map[schemas.StorageTier]lowerSeqs, len(lowerTierOrder))
		}
		s = lowerSeqs{}
		st.lower[tier] = s
	}
	return s
}

// rebuildLower derives st.lower from st.other after a snapshot load.
func (st *workerState) rebuildLower() {
	st.lower = nil
	n := int64(0)
	for tier, m := range st.other {
		s := st.lowerFor(tier)
		m.all(func(_, seq uint64) bool {
			s[seq]++
			n++
			return true
		})
	}
	st.lowerN.Store(n)
}

func (s lowerSeqs) dec(seq uint64) {
	if c := s[seq]; c > 1 {
		s[seq] = c - 1
	} else {
		delete(s, seq)
	}
}

// LowerOverlap extends the device overlap of each (worker, dp rank) onto
// the lower tiers as Dynamo's indexer does (query_lower_tiers in
// lib/kv-router/src/indexer/lower_tier_indexers.rs @1783f723, over
// LowerTierIndexer in lower_tier.rs @514be2b3): one forward chain per
// worker, starting at its device
// overlap device[k] (0 when absent, which is Dynamo's continuation from
// the root), counting the consecutive prompt blocks held on host_pinned,
// then continuing from there on disk, then on external. seqHashes are the
// prompt's sequence hashes, device is Overlap's answer for them.
//
// Dynamo matches a lower tier by (parent external hash, tokens hash)
// edges; this index matches by sequence hash, chained from the same
// tokens hashes, which is the same answer whenever an engine names one
// block content by one external hash on every tier (as vLLM, SGLang and
// KVBM do).
//
// Only pairs holding lower-tier blocks appear, and only with some hit;
// with no lower-tier block in the index it returns nil at once, so the
// device-only case costs one atomic load. Stale pairs are left out when
// WithExcludeStale is set, as in Overlap.
func (ix *Memory) LowerOverlap(seqHashes []uint64, device map[kvevents.WorkerKey]int) map[kvevents.WorkerKey]LowerOverlap {
	if len(seqHashes) == 0 || ix.otherBlocks.Load() == 0 {
		return nil
	}
	var out map[kvevents.WorkerKey]LowerOverlap
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for k, st := range ix.workers {
		if st.lowerN.Load() == 0 {
			continue
		}
		if ix.excludeStale && st.page.stale.Load()&st.bit != 0 {
			continue
		}
		st.mu.Lock()
		pos := min(device[k], len(seqHashes))
		var lo LowerOverlap
		hits := [...]*int{&lo.HostPinned, &lo.Disk, &lo.External}
		for i, tier := range lowerTierOrder {
			s := st.lower[tier]
			if len(s) == 0 {
				continue
			}
			start := pos
			for pos < len(seqHashes) && s[seqHashes[pos]] > 0 {
				pos++
			}
			*hits[i] = pos - start
		}
		st.mu.Unlock()
		if lo != (LowerOverlap{}) {
			if out == nil {
				out = map[kvevents.WorkerKey]LowerOverlap{}
			}
			out[k] = lo
		}
	}
	return out
}
