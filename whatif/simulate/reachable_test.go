package simulate

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// On small workloads, no L3 keeping beats the hint-reachable bound:
// every choice of which page to evict (the no-hints run's devices and
// router, L3 pages on announced turns free), searched exhaustively.
func TestReachableBoundExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for trial := range 200 {
		w := tinyTrace(t, rng)
		cfg, err := Config{Workload: w, Workers: 2, DeviceBlocks: 2, L3Blocks: 2 + rng.IntN(2)}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		pr, err := newPrompts(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := reachableMode(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		best := exhaustiveL3(t, cfg, pr)
		if best < b.Cost-1e-9 {
			t.Fatalf("trial %d: a keeping costs %v, the hint-reachable bound %v", trial, best, b.Cost)
		}
		none, err := runMode(context.Background(), cfg, pr, ModeNoHints, nil)
		if err != nil {
			t.Fatal(err)
		}
		cb, _, err := boundMode(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		if none.Cost < b.Cost-1e-9 || b.Cost < cb.Cost-1e-9 {
			t.Fatalf("trial %d: no hints %v, reachable %v, clairvoyant %v", trial, none.Cost, b.Cost, cb.Cost)
		}
	}
}

// tinyTrace is a few requests over a few blocks, some linked.
func tinyTrace(t *testing.T, rng *rand.Rand) *workload.Workload {
	t.Helper()
	var lines []byte
	ts := 0
	for range 4 + rng.IntN(3) {
		ts += 1000 * rng.IntN(3)
		k := 2 + rng.IntN(2)
		ids := "["
		for j := range k {
			if j > 0 {
				ids += ", "
			}
			ids += string(rune('0' + rng.IntN(4)))
		}
		ids += "]"
		lines = append(lines, []byte(`{"timestamp": `+strconv.Itoa(ts)+`, "input_length": `+strconv.Itoa(k*16)+`, "output_length": 1, "hash_ids": `+ids+"}\n")...)
	}
	w, err := workload.ReadTrace(bytes.NewReader(lines), workload.TraceOptions{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// exhaustiveL3 is the least cost over every L3 eviction choice, with the
// devices and routing of the no-hints run, a page in L3 after the device
// prefix costing Alpha (0 on an announced turn), the rest recomputed.
func exhaustiveL3(t *testing.T, cfg Config, pr *prompts) float64 {
	t.Helper()
	w := cfg.Workload
	cc := clusterConfig(cfg)
	cc.L3Blocks = 1024
	cl, err := cluster.NewCluster(cc)
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		seq []uint64
		dev int
		in  int
		ann bool
	}
	var reqs []req
	for _, ev := range w.Events {
		cl.Advance(ev.At)
		if ev.Kind != workload.KindRequest {
			continue
		}
		r := &w.Requests[ev.Request]
		p, err := pr.get(ev.Request)
		if err != nil {
			t.Fatal(err)
		}
		wk, _, err := cl.Route(p)
		if err != nil {
			t.Fatal(err)
		}
		d := cl.Workers[wk].Cache.Prefix(p.Seq)
		if _, err := cl.Serve(wk, p, r.InputLength, w.Service.PrefillTime(r.InputLength), r.ResponseAt); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req{seq: p.Seq, dev: d, in: r.InputLength, ann: r.HasWakeup})
	}
	bs := float64(w.BlockSize)
	// Cost to go from request i with L3 holding l3 (sorted), memoised.
	// Keeping more never costs more, so only the largest keepings are
	// tried.
	memo := map[string]float64{}
	var togo func(i int, l3 []uint64) float64
	togo = func(i int, l3 []uint64) float64 {
		if i == len(reqs) {
			return 0
		}
		key := fmt.Sprint(i, l3)
		if v, ok := memo[key]; ok {
			return v
		}
		r := reqs[i]
		held := map[uint64]bool{}
		for _, h := range l3 {
			held[h] = true
		}
		c := float64(r.in - r.dev*w.BlockSize)
		for _, h := range r.seq[r.dev:] {
			if !held[h] {
				break // a load needs the pages in a row after the device's
			}
			if r.ann {
				c -= bs
			} else {
				c -= (1 - cfg.Alpha) * bs
			}
		}
		for _, h := range r.seq {
			held[h] = true
		}
		// A page no later request holds is worth nothing kept.
		later := map[uint64]bool{}
		for _, q := range reqs[i+1:] {
			for _, h := range q.seq {
				later[h] = true
			}
		}
		pages := make([]uint64, 0, len(held))
		for h := range held {
			if later[h] {
				pages = append(pages, h)
			}
		}
		slices.Sort(pages)
		keep := min(len(pages), cfg.L3Blocks)
		best := math.Inf(1)
		for mask := 0; mask < 1<<len(pages); mask++ {
			if bits.OnesCount(uint(mask)) != keep {
				continue
			}
			var kept []uint64
			for j, h := range pages {
				if mask&(1<<j) != 0 {
					kept = append(kept, h)
				}
			}
			best = min(best, togo(i+1, kept))
		}
		memo[key] = c + best
		return c + best
	}
	return togo(0, nil)
}
