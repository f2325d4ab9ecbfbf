package routing

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// storeSeeded makes k hold the first n blocks of p hashed with block seed
// seed, as an engine serving a LoRA adapter or cache namespace reports them.
func storeSeeded(t testing.TB, ix *index.Memory, k kvevents.WorkerKey, p []uint32, bs, n int, seed uint64, tier schemas.StorageTier) {
	t.Helper()
	local := kvevents.LocalBlockHashesSeeded(p, bs, seed)[:n]
	blocks := make([]kvevents.Block, n)
	for i, h := range local {
		blocks[i] = kvevents.Block{ExternalHash: seed ^ (k.WorkerID<<40 | uint64(k.DpRank)<<32 | uint64(i+1)), LocalHash: h}
	}
	if err := ix.Apply(kvevents.Event{Worker: k, Kind: schemas.KindStored, Tier: tier, Blocks: blocks}); err != nil {
		t.Fatal(err)
	}
}

// A request naming a LoRA adapter (or a cache_salt) matches only the
// blocks hashed with that adapter's seed, as Dynamo's router hashes it.
func TestSelectHashesWithLoraAndSalt(t *testing.T) {
	ix := index.New()
	p := prompt(160)
	storeSeeded(t, ix, key(1, 0), p, 16, 8, kvevents.HashSeed, "")
	storeSeeded(t, ix, key(2, 0), p, 16, 8, kvevents.BlockSeed("adapter-a", ""), "")
	storeSeeded(t, ix, key(3, 0), p, 16, 8, kvevents.BlockSeed("adapter-a", "tenant-1"), "")
	s := mustSelector(NewSelector(staticWorkers{worker(1, "m", 16, 1), worker(2, "m", 16, 1), worker(3, "m", 16, 1)}, ix, nil))
	for _, c := range []struct {
		lora, salt string
		want       uint64
	}{{"", "", 1}, {"adapter-a", "", 2}, {"adapter-a", "tenant-1", 3}} {
		got, err := s.Select(&schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: p, LoraName: c.lora, CacheSalt: c.salt})
		if err != nil {
			t.Fatal(err)
		}
		if got.Worker.WorkerID != c.want || got.Overlap != 8 {
			t.Errorf("lora %q salt %q: chose %v with overlap %d, want worker %d with 8", c.lora, c.salt, got.Worker, got.Overlap, c.want)
		}
	}
}
