package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/routing"
)

// routerFlags registers the worker-choice cost flags of run and replay,
// under the names of Dynamo's frontend router flags (the flag table of its
// router documentation) and with the defaults of its KvRouterConfig
// (lib/kv-router/src/scheduling/config.rs, ai-dynamo/dynamo commit
// 07a6c9ce3bb096cfaf353fe69ee578e105c6a512; see README › Decisions). The
// returned func copies them into a routing.Config and validates it.
// --router-temperature and the classic --overlap-score-weight are declared
// by the commands themselves.
func routerFlags(fs *flag.FlagSet) func(*routing.Config) error {
	var (
		cost   = fs.String("router-cost", string(routing.DefaultCost), "worker-choice cost: default (today's Dynamo DefaultWorkerSelector: tiered overlap credit) or classic (overlap_score_weight * prefill + decode, for older Dynamo)")
		credit = fs.Float64("router-kv-overlap-score-credit", routing.DefaultOverlapScoreCredit, "credit per device-cached prompt block against the prefill blocks, as Dynamo's flag (0: ignore device overlap)")
		decay  = fs.Float64("router-kv-overlap-score-credit-decay", routing.DefaultOverlapScoreCreditDecay, "shrink the device credit of workers with more active prefill than the least loaded, as Dynamo's flag (0: off)")
		scale  = fs.Float64("router-prefill-load-scale", routing.DefaultPrefillLoadScale, "multiplier of the prefill blocks left after the credits, as Dynamo's flag")
		reqW   = fs.Float64("router-decode-active-request-weight", routing.DefaultDecodeActiveRequestWeight, "cost per active request, as Dynamo's flag; kv.load reports carry no request count, so it has no effect here")
		host   = fs.Float64("router-host-cache-hit-weight", routing.DefaultHostCacheHitWeight, "credit per host_pinned (CPU) block past the device prefix, as Dynamo's flag")
		disk   = fs.Float64("router-disk-cache-hit-weight", routing.DefaultDiskCacheHitWeight, "credit per disk or external block past the host prefix, as Dynamo's flag")
	)
	return func(c *routing.Config) error {
		switch m := routing.CostModel(*cost); m {
		case routing.CostDefault, routing.CostClassic:
			c.Cost = m
		default:
			return fmt.Errorf("--router-cost must be %s or %s, got %q", routing.CostDefault, routing.CostClassic, *cost)
		}
		c.OverlapScoreCredit, c.OverlapScoreCreditDecay, c.PrefillLoadScale = *credit, *decay, *scale
		c.DecodeActiveRequestWeight, c.HostCacheHitWeight, c.DiskCacheHitWeight = *reqW, *host, *disk
		return c.Validate()
	}
}
