package simulate

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// The hint-reachable bound: the least prefill cost a policy can reach
// that changes only what L3 keeps and, on the turns a hint announces,
// puts the turn's L3 pages on its worker before it comes. Everything
// else is the no-hints run's:
//
//   - the same router and device caches (LRU, written by the requests
//     served): a request's leading blocks on its worker's device cost 0;
//   - L3 alone keeps pages (capacity L3Blocks; a device page is a copy of
//     an L3 page, written through, not extra capacity), by Belady's rule
//     with bypass, knowing every future request;
//   - a kept page costs Alpha on a turn no hint placed, 0 on an announced
//     turn (a prefetch loaded it in time: a wake-up ahead of the turn,
//     or any with instant loads); a page not kept is recomputed.
//
// Which pages to keep weighs a hit 1 on announced turns and 1 − Alpha on
// others, and Belady's greedy is optimal for unit weights only. So the
// bound takes N, the most hits any keeping gets (Belady over every
// reuse interval that ends off the device), and Nh, the most on
// announced turns alone, and charges Σ non-device blocks − (1 − Alpha)N −
// Alpha·Nh: no keeping's weighted hits, (1 − Alpha)·all + Alpha·announced,
// exceed that. An interval that ends on a device hit is worth nothing
// and never kept; a page's interval starts at its latest access, device
// hit or not (every request writes its pages through).
//
// It is a bound for policies that route as the router does and prefetch
// a turn's own pages to that worker (then the devices evolve as without
// hints). Affinity or a prefetch elsewhere changes the devices, so a run
// can in principle beat it; Result.ReachableBeaten reports any that did.

// beladyHits plays Belady with bypass over a store of capacity pages:
// seqs are each request's blocks in play order, at their times;
// valuable(i, k) says whether a hit of request i's block k counts (an
// interval ending at a worthless access is never kept). It returns, per
// request, the valuable blocks found kept, and calls mark (if not nil)
// with each of them.
func beladyHits(seqs [][]uint64, at []int64, capacity int, valuable func(i, k int) bool, mark func(i, k int)) []int {
	n := len(seqs)
	hits := make([]int, n)
	next := make([][]int32, n)
	nextK := make([][]int32, n)
	last := map[uint64][2]int32{}
	for i := n - 1; i >= 0; i-- {
		next[i] = make([]int32, len(seqs[i]))
		nextK[i] = make([]int32, len(seqs[i]))
		for k, h := range seqs[i] {
			if j, ok := last[h]; ok {
				next[i][k], nextK[i][k] = j[0], j[1]
			} else {
				next[i][k] = int32(n)
			}
			last[h] = [2]int32{int32(i), int32(k)}
		}
	}
	kept := map[uint64]int32{}
	h := &farthest{}
	for i := 0; i < n; {
		j := i + 1
		for j < n && at[j] == at[i] {
			j++
		}
		produced := map[uint64]bool{}
		for r := i; r < j; r++ {
			for k, b := range seqs[r] {
				if _, ok := kept[b]; (ok || produced[b]) && valuable(r, k) {
					hits[r]++
					if mark != nil {
						mark(r, k)
					}
				}
			}
			for _, b := range seqs[r] {
				produced[b] = true
			}
		}
		for r := i; r < j; r++ {
			for k, b := range seqs[r] {
				nu := next[r][k]
				if nu < int32(j) && nu != int32(n) {
					continue
				}
				if nu == int32(n) || !valuable(int(nu), int(nextK[r][k])) {
					delete(kept, b)
					continue
				}
				kept[b] = nu
				heap.Push(h, item{page: b, next: nu})
			}
		}
		for len(kept) > capacity {
			it := heap.Pop(h).(item)
			if nu, ok := kept[it.page]; ok && nu == it.next {
				delete(kept, it.page)
			}
		}
		i = j
	}
	return hits
}

// reachableMode computes the hint-reachable bound for the run's workload
// and capacities.
func reachableMode(cfg Config, pr *prompts) (ModeResult, error) {
	return reachablePlay(cfg, pr, false)
}

// reachableStream is reachableMode for Simulate: each request's block ids
// (Config.IDs) and hashes are held only while its prompt is routed and
// served, and no per-request costs are kept.
func reachableStream(cfg Config, pr *prompts) (ModeResult, error) {
	return reachablePlay(cfg, pr, true)
}

func reachablePlay(cfg Config, pr *prompts, stream bool) (ModeResult, error) {
	w := cfg.Workload
	cc := clusterConfig(cfg)
	cc.KVBytesPerToken, cc.L3Bandwidth = 0, 0
	// The bound keeps L3 itself; the cluster's only models devices and
	// routing, so its L3 holds every page. (Its L3 decides nothing the
	// bound reads: streamed, one page does, to hold nothing.)
	cc.L3Blocks = 1
	for i := range w.Len() {
		if stream {
			break
		}
		cc.L3Blocks += len(w.Req(i).HashIDs)
	}
	cl, err := cluster.NewCluster(cc)
	if err != nil {
		return ModeResult{}, err
	}
	n := w.Len()
	dev := make([]int32, n)
	// The requests' blocks go onto a tape on disk with their next uses
	// (tape.go): memory holds a map of distinct blocks, not the trace's.
	t, err := newTape(cfg.TempDir)
	if err != nil {
		return ModeResult{}, err
	}
	defer t.close()
	blocks := make([]int32, n)
	added := 0
	for _, ev := range w.EventRange(0, w.NumEvents()) {
		cl.Advance(ev.At)
		if ev.Kind != workload.KindRequest {
			continue
		}
		i := ev.Request
		if i != added {
			return ModeResult{}, fmt.Errorf("simulate: reachable bound: request %d played before request %d", i, added)
		}
		var held bool
		if stream {
			held = w.Req(i).HashIDs != nil
			if err := loadIDs(cfg, i); err != nil {
				return ModeResult{}, err
			}
		}
		r := w.Req(i)
		get := pr.get
		if stream {
			get = pr.unkeyed
		}
		p, err := get(i)
		if err != nil {
			return ModeResult{}, err
		}
		wk, _, err := cl.Route(p)
		if err != nil {
			return ModeResult{}, err
		}
		dev[i] = int32(cl.Workers[wk].Cache.Prefix(p.Seq))
		if _, err := cl.Serve(wk, p, r.InputLength, w.Service.PrefillTime(r.InputLength), r.ResponseAt); err != nil {
			return ModeResult{}, err
		}
		if err := t.add(i, p.Seq); err != nil {
			return ModeResult{}, err
		}
		blocks[i] = int32(len(p.Seq))
		added++
		if stream {
			pr.release(i)
			if !held {
				dropIDs(cfg, i)
			}
		}
	}
	count := func(i int) int { return int(blocks[i]) }
	at := func(i int) int64 { return int64(w.Req(i).At) }
	offDevice := func(i, k int) bool { return k >= int(dev[i]) }
	rd, err := t.rewind()
	if err != nil {
		return ModeResult{}, err
	}
	all, err := beladyTape(rd, n, count, at, cfg.L3Blocks, offDevice)
	if err != nil {
		return ModeResult{}, err
	}
	if rd, err = t.rewind(); err != nil {
		return ModeResult{}, err
	}
	// A wake-up at the turn's own time (a tool's end) places nothing in
	// time when loads take time.
	placed := func(r *workload.Request) bool { return r.HasWakeup && (r.WakeupAt < r.At || !cfg.TransferTime) }
	announced, err := beladyTape(rd, n, count, at, cfg.L3Blocks, func(i, k int) bool { return k >= int(dev[i]) && placed(w.Req(i)) })
	if err != nil {
		return ModeResult{}, err
	}
	res := ModeResult{Mode: ModeReachable, PrefetchAccuracy: math.NaN(), PinsHonoured: math.NaN()}
	if !stream {
		res.PerRequestCost = make([]float64, n)
	}
	bs := float64(w.BlockSize)
	for i := range w.Len() {
		r := w.Req(i)
		devTok := int64(min(int(dev[i])*w.BlockSize, r.InputLength))
		res.Requests++
		res.PromptTokens += int64(r.InputLength)
		res.DeviceHitTokens += devTok
		c := float64(int64(r.InputLength)-devTok) - bs*((1-cfg.Alpha)*float64(all[i])+cfg.Alpha*float64(announced[i]))
		if !stream {
			res.PerRequestCost[i] = c
		}
		res.Cost += c
		res.Placed += bs * cfg.Alpha * float64(announced[i])
	}
	res.RecomputedTokens = int64(math.Round(res.Cost))
	return res, nil
}
