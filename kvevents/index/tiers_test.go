package index

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// tierStore stores blocks from..to of a prompt (local hashes local) for w
// on tier, chained after block from-1 (the engine's external hash of block
// i is ext(i), the same on every tier, as vLLM offloading keeps it).
func tierStore(t testing.TB, ix *Memory, w kvevents.WorkerKey, tier schemas.StorageTier, local []uint64, from, to int, id uint64) {
	t.Helper()
	ext := func(i int) uint64 { return 1000 + uint64(i) }
	ev := kvevents.Event{Worker: w, EventID: id, Kind: schemas.KindStored, Tier: tier}
	if from > 0 {
		p := ext(from - 1)
		ev.ParentHash = &p
	}
	for i := from; i < to; i++ {
		ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext(i), LocalHash: local[i]})
	}
	if err := ix.Apply(ev); err != nil {
		t.Fatal(err)
	}
}

// Each tier continues where the one before stopped: device, then
// host_pinned, then disk, then external, as Dynamo's query_lower_tiers.
func TestLowerOverlapChainsTiers(t *testing.T) {
	ix := New()
	tokens := make([]uint32, 16*10)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	local := kvevents.LocalBlockHashes(tokens, 16)
	seq := kvevents.PromptHashes(tokens, 16)
	a, b, c := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2}, kvevents.WorkerKey{WorkerID: 3, DpRank: 1}
	// a: device 0-2, host 0-5 (a copy of the device blocks and 3 more), disk 5-7, external 7-8.
	tierStore(t, ix, a, "", local, 0, 3, 1)
	tierStore(t, ix, a, schemas.TierHostPinned, local, 0, 6, 2)
	tierStore(t, ix, a, schemas.TierDisk, local, 6, 8, 3)
	tierStore(t, ix, a, schemas.TierExternal, local, 8, 9, 4)
	// b: nothing on device, host from the root 0-3.
	tierStore(t, ix, b, schemas.TierHostPinned, local, 0, 4, 1)
	// c: disk only, from the root: its chain starts at block 0 on disk.
	tierStore(t, ix, c, schemas.TierDisk, local, 0, 2, 1)
	dev := ix.Overlap(seq)
	if dev[a] != 3 || len(dev) != 1 {
		t.Fatalf("device overlap %v", dev)
	}
	got := ix.LowerOverlap(seq, dev)
	want := map[kvevents.WorkerKey]LowerOverlap{
		a: {HostPinned: 3, Disk: 2, External: 1},
		b: {HostPinned: 4},
		c: {Disk: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("LowerOverlap = %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: %+v, want %+v", k, got[k], w)
		}
	}
	// Removing host block 4 of a cuts its chain there: disk and external
	// no longer continue.
	mustApply(t, ix, kvevents.Event{Worker: a, EventID: 5, Kind: schemas.KindRemoved, Tier: schemas.TierHostPinned, Removed: []uint64{1004}})
	if got := ix.LowerOverlap(seq, dev)[a]; got != (LowerOverlap{HostPinned: 1}) {
		t.Errorf("after a host removal: %+v", got)
	}
	// Clearing the host tier drops it whole.
	mustApply(t, ix, kvevents.Event{Worker: a, EventID: 6, Kind: schemas.KindCleared, Tier: schemas.TierHostPinned})
	if got := ix.LowerOverlap(seq, dev)[a]; got != (LowerOverlap{}) {
		t.Errorf("after a host clear: %+v", got)
	}
	// Device-only index: nil, at once.
	only := New()
	tierStore(t, only, a, "", local, 0, 3, 1)
	if got := only.LowerOverlap(seq, only.Overlap(seq)); got != nil {
		t.Errorf("device-only LowerOverlap = %v", got)
	}
}

// Random stores and removals on every tier, against a naive model that
// keeps each worker's set of sequence hashes per tier and walks the chain.
func TestLowerOverlapMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 13))
	tiers := []schemas.StorageTier{"", schemas.TierHostPinned, schemas.TierDisk, schemas.TierExternal}
	const nBlocks = 24
	tokens := make([]uint32, 16*nBlocks)
	for i := range tokens {
		tokens[i] = uint32(i * 3)
	}
	local := kvevents.LocalBlockHashes(tokens, 16)
	seq := kvevents.PromptHashes(tokens, 16)
	for round := range 40 {
		ix := New(WithJump(1))
		held := map[kvevents.WorkerKey]map[schemas.StorageTier]map[int]bool{}
		ids := map[kvevents.WorkerKey]uint64{}
		for range 60 {
			w := kvevents.WorkerKey{WorkerID: uint64(r.IntN(4)), DpRank: uint32(r.IntN(2))}
			tier := tiers[r.IntN(len(tiers))]
			if held[w] == nil {
				held[w] = map[schemas.StorageTier]map[int]bool{}
			}
			if held[w][tier] == nil {
				held[w][tier] = map[int]bool{}
			}
			ids[w]++
			if r.IntN(4) == 0 && len(held[w][tier]) > 0 {
				// Remove a suffix, keeping every tier prefix-closed from its start.
				var top int
				for i := range held[w][tier] {
					top = max(top, i)
				}
				mustApply(t, ix, kvevents.Event{Worker: w, EventID: ids[w], Kind: schemas.KindRemoved, Tier: tier, Removed: []uint64{1000 + uint64(top)}})
				delete(held[w][tier], top)
				continue
			}
			// Store a run that starts at the root or right after a block
			// the worker holds on some tier (so its parent is known).
			from := 0
			if r.IntN(2) == 0 {
				for t2, s := range held[w] {
					_ = t2
					for i := range s {
						from = max(from, i+1)
					}
				}
			}
			if from >= nBlocks {
				continue
			}
			to := min(nBlocks, from+1+r.IntN(6))
			tierStore(t, ix, w, tier, local, from, to, ids[w])
			for i := from; i < to; i++ {
				held[w][tier][i] = true
			}
		}
		dev := ix.Overlap(seq)
		got := ix.LowerOverlap(seq, dev)
		for w, byTier := range held {
			d := 0
			for d < nBlocks && byTier[""][d] {
				d++
			}
			if dev[w] != d {
				t.Fatalf("round %d %v: device %d, model %d", round, w, dev[w], d)
			}
			var want LowerOverlap
			pos := d
			for i, tier := range lowerTierOrder {
				start := pos
				for pos < nBlocks && byTier[tier][pos] {
					pos++
				}
				*[...]*int{&want.HostPinned, &want.Disk, &want.External}[i] = pos - start
			}
			if got[w] != want {
				t.Fatalf("round %d %v: %+v, model %+v (held %v)", round, w, got[w], want, byTier)
			}
		}
	}
}

// An event of a tier none of Dynamo's is counted and ignored: no block,
// no worker state beyond its event id (so the next id is no gap).
func TestUnknownTierCountedAndIgnored(t *testing.T) {
	ix := New()
	w := kvevents.WorkerKey{WorkerID: 4}
	err := ix.Apply(kvevents.Event{Worker: w, EventID: 1, Kind: schemas.KindStored, Tier: "tape",
		Blocks: []kvevents.Block{{ExternalHash: 1, LocalHash: 2}}})
	if !errors.Is(err, ErrUnknownTier) || errors.Is(err, ErrBadEvent) {
		t.Fatalf("Apply = %v, want ErrUnknownTier", err)
	}
	mustApply(t, ix, kvevents.Event{Worker: w, EventID: 2, Kind: schemas.KindCleared})
	st := ix.Stats()
	if st.UnknownTier != 1 || st.DeviceBlocks != 0 || st.OtherTierBlocks != 0 || st.Gaps != 0 {
		t.Fatalf("Stats = %+v", st)
	}
}

// The snapshot carries every tier's (external, sequence) pairs already;
// a load rebuilds the lower-tier lookup from them, so LowerOverlap after a
// round trip is the same.
func TestSnapshotKeepsLowerOverlap(t *testing.T) {
	ix := New()
	tokens := make([]uint32, 16*8)
	for i := range tokens {
		tokens[i] = uint32(i + 5)
	}
	local := kvevents.LocalBlockHashes(tokens, 16)
	seq := kvevents.PromptHashes(tokens, 16)
	a, b := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2, DpRank: 3}
	tierStore(t, ix, a, "", local, 0, 2, 1)
	tierStore(t, ix, a, schemas.TierHostPinned, local, 2, 5, 2)
	tierStore(t, ix, a, schemas.TierExternal, local, 5, 7, 3)
	tierStore(t, ix, b, schemas.TierDisk, local, 0, 3, 1)
	want := ix.LowerOverlap(seq, ix.Overlap(seq))
	var buf bytes.Buffer
	if err := ix.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	back := New()
	if err := back.ReadSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	got := back.LowerOverlap(seq, back.Overlap(seq))
	if len(got) != 2 || got[a] != want[a] || got[b] != want[b] || got[a] != (LowerOverlap{HostPinned: 3, External: 2}) {
		t.Fatalf("after a snapshot: %v, before %v", got, want)
	}
}
