package routing

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// pyrefCases is how many random cases TestCostMatchesPythonReference
// runs: 10,000, or 2,000 under the race detector (make test), whose
// slowdown would otherwise make this one test take minutes.
var pyrefCases = map[bool]int{false: 10_000, true: 2_000}[raceBuild]

var pyrefTiers = map[string]schemas.StorageTier{"device": "", "host_pinned": schemas.TierHostPinned,
	"disk": schemas.TierDisk, "external": schemas.TierExternal}

// randomCostCase makes one case: 1-64 workers of 1-4 dp ranks, block
// sizes 1-64, prompts of 1-1,100 tokens with a partial tail, a LoRA name
// and/or cache_salt on some requests, up to a dozen candidates holding
// prefixes on device and continuations on host_pinned, disk and external
// (some hashed under another adapter or salt, so they must not match),
// loads on most candidates, and random weights.
func randomCostCase(r *rand.Rand) pypeer.CostCase {
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	c := pypeer.CostCase{Config: map[string]float64{
		"overlap_score_credit":         pick(1, 1, 0, 0.5, 1.5),
		"overlap_score_credit_decay":   pick(0, 0, 0.5, 1, 3),
		"prefill_load_scale":           pick(1, 1, 0.5, 2, 10),
		"decode_active_request_weight": pick(0, 8),
		"host_cache_hit_weight":        pick(0.75, 0.75, 0, 0.5, 1),
		"disk_cache_hit_weight":        pick(0.25, 0.25, 0, 0.1, 0.5),
	}}
	c.BlockSize = []int{1, 2, 4, 8, 16, 16, 32, 64}[r.IntN(8)]
	nb := r.IntN(min(64, 1024/c.BlockSize) + 1)
	isl := max(1, nb*c.BlockSize+r.IntN(c.BlockSize))
	c.Tokens = make([]uint32, isl)
	for i := range c.Tokens {
		c.Tokens[i] = uint32(r.IntN(200_000))
	}
	names := []string{"", "", "adapter-a", "adapter-b"}
	salts := []string{"", "", "tenant-1"}
	c.LoraName, c.CacheSalt = names[r.IntN(len(names))], salts[r.IntN(len(salts))]
	nb = isl / c.BlockSize
	nWorkers := 1 + r.IntN(64)
	holders := r.IntN(13)
	for id := range nWorkers {
		ranks := 1 + r.IntN(4)
		if r.IntN(3) > 0 {
			ranks = 1
		}
		for rank := range ranks {
			w := pypeer.CostWorker{WorkerID: uint64(1000 + id*7), DpRank: uint32(rank), ExtBase: r.Uint64() >> 8}
			if r.IntN(5) > 0 {
				w.Load = &pypeer.CostLoad{ActivePrefillTokens: uint64(r.IntN(3) * r.IntN(4096)), ActiveDecodeBlocks: uint64(r.IntN(2000))}
			}
			if holders > 0 && r.IntN(2) == 0 {
				holders--
				w.Stores = randomStores(r, nb, c.LoraName, c.CacheSalt)
			}
			c.Workers = append(c.Workers, w)
		}
	}
	return c
}

// randomStores makes a candidate's stores: a device prefix, then ranges
// on the lower tiers, each starting at the root or right after a block the
// candidate already holds (so its parent is known, as engines send them).
func randomStores(r *rand.Rand, nb int, lora, salt string) []pypeer.CostStore {
	if nb == 0 {
		return nil
	}
	if r.IntN(5) == 0 { // cached under another adapter or salt: no match
		lora, salt = lora+"-other", salt+"x"
	}
	held := map[int]bool{}
	var out []pypeer.CostStore
	add := func(tier string, from, to int) {
		if to <= from {
			return
		}
		out = append(out, pypeer.CostStore{Tier: tier, From: from, To: to, LoraName: lora, CacheSalt: salt})
		for i := from; i < to; i++ {
			held[i] = true
		}
	}
	if d := r.IntN(nb + 1); r.IntN(4) > 0 {
		cut := r.IntN(d + 1) // in one or two events
		add("device", 0, cut)
		add("device", cut, d)
	}
	for _, tier := range []string{"host_pinned", "disk", "external"} {
		if r.IntN(2) == 0 {
			continue
		}
		starts := []int{0}
		for i := range nb {
			if held[i] {
				starts = append(starts, i+1)
			}
		}
		from := starts[r.IntN(len(starts))]
		if from >= nb {
			continue
		}
		add(tier, from, from+1+r.IntN(nb-from))
	}
	return out
}

// choiceFor runs hintstream's Selector, over a real Index fed the case's
// stores as KV events, on one case.
func choiceFor(t *testing.T, c pypeer.CostCase) (Candidate, error) {
	t.Helper()
	ix := index.New()
	loads := NewLoadTable()
	ranks := map[uint64]int{}
	var order []uint64
	for _, w := range c.Workers {
		k := kvevents.WorkerKey{WorkerID: w.WorkerID, DpRank: w.DpRank}
		if _, ok := ranks[w.WorkerID]; !ok {
			order = append(order, w.WorkerID)
		}
		ranks[w.WorkerID] = max(ranks[w.WorkerID], int(w.DpRank)+1)
		if w.Load != nil {
			if err := loads.Update(schemas.ActiveLoad{WorkerID: w.WorkerID, DpRank: w.DpRank,
				ActivePrefillTokens: u64(w.Load.ActivePrefillTokens), ActiveDecodeBlocks: u64(w.Load.ActiveDecodeBlocks)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range w.Stores {
			local := kvevents.LocalBlockHashesSeeded(c.Tokens, c.BlockSize, kvevents.BlockSeed(s.LoraName, s.CacheSalt))
			ev := kvevents.Event{Worker: k, Kind: schemas.KindStored, Tier: pyrefTiers[s.Tier]}
			if s.From > 0 {
				p := w.ExtBase + uint64(s.From-1)
				ev.ParentHash = &p
			}
			for i := s.From; i < s.To; i++ {
				ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: w.ExtBase + uint64(i), LocalHash: local[i]})
			}
			if err := ix.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	var recs staticWorkers
	for _, id := range order {
		recs = append(recs, worker(id, "m", uint32(c.BlockSize), ranks[id]))
	}
	cfg := DefaultConfig()
	cfg.OverlapScoreCredit, cfg.OverlapScoreCreditDecay = c.Config["overlap_score_credit"], c.Config["overlap_score_credit_decay"]
	cfg.PrefillLoadScale, cfg.DecodeActiveRequestWeight = c.Config["prefill_load_scale"], c.Config["decode_active_request_weight"]
	cfg.HostCacheHitWeight, cfg.DiskCacheHitWeight = c.Config["host_cache_hit_weight"], c.Config["disk_cache_hit_weight"]
	s := mustSelector(NewSelector(recs, ix, loads, WithConfig(cfg)))
	return s.Select(&schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: c.Tokens, LoraName: c.LoraName, CacheSalt: c.CacheSalt})
}

// TestCostMatchesPythonReference runs 10,000 random cases through
// hintstream (KV events into a real Index, then the Selector) and through
// internal/pypeer/dynamo_cost.py, a model of Dynamo's router written from
// its Rust source that hashes the prompt itself and matches tiers by
// Dynamo's (parent, local hash) edges, and requires the same choice at
// temperature 0, with the same cost and tier counts. Exact ties are
// broken on both sides by hintstream's documented rule (Dynamo picks at
// random among them); the test reports how many cases had one.
func TestCostMatchesPythonReference(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 13))
	cases := make([]pypeer.CostCase, pyrefCases)
	for i := range cases {
		cases[i] = randomCostCase(r)
	}
	want := pypeer.RunCostReference(t, cases)
	var ties, lowerTier, salted, multiRank int
	for i, c := range cases {
		got, err := choiceFor(t, c)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		w := want[i]
		gotKey := fmt.Sprintf("%d/%d", got.Worker.WorkerID, got.Worker.DpRank)
		wantKey := fmt.Sprintf("%d/%d", w.WorkerID, w.DpRank)
		if gotKey != wantKey || got.Logit != w.Cost || got.Overlap != w.Device ||
			got.HostPinned != w.Host || got.Disk+got.External != w.Disk {
			t.Fatalf("case %d (bs %d, isl %d, lora %q, salt %q, %d candidates): hintstream chose %s cost %v tiers %d/%d/%d; reference %s cost %v tiers %d/%d/%d (%d tied)",
				i, c.BlockSize, len(c.Tokens), c.LoraName, c.CacheSalt, len(c.Workers), gotKey, got.Logit,
				got.Overlap, got.HostPinned, got.Disk+got.External, wantKey, w.Cost, w.Device, w.Host, w.Disk, w.Ties)
		}
		if w.Ties > 1 {
			ties++
		}
		if w.Host+w.Disk > 0 {
			lowerTier++
		}
		if c.LoraName != "" || c.CacheSalt != "" {
			salted++
		}
		if got.Worker.DpRank > 0 {
			multiRank++
		}
	}
	if lowerTier < pyrefCases/20 || salted < pyrefCases/4 || multiRank < pyrefCases/50 {
		t.Fatalf("cases too narrow: %d chose with lower-tier hits, %d salted, %d chose dp rank > 0", lowerTier, salted, multiRank)
	}
	t.Logf("%d cases agree; chosen with lower-tier hits %d, salted/LoRA requests %d, dp rank > 0 chosen %d, exact ties broken by the rule %d",
		pyrefCases, lowerTier, salted, multiRank, ties)
}
