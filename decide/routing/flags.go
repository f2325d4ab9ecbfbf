package routing

import "flag"

// RegisterFlags registers the worker choice's flags on fs, bound to c and
// set to the defaults of DefaultConfig: Dynamo's frontend router flag
// names (the flag table of its router documentation) with the defaults of
// its KvRouterConfig (lib/kv-router/src/scheduling/config.rs, ai-dynamo/
// dynamo commit 07a6c9ce3bb096cfaf353fe69ee578e105c6a512), plus burst
// spreading, which departs from the router on purpose. Validate checks
// what was parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.StringVar((*string)(&c.Cost), "router-cost", string(d.Cost), "worker-choice cost: default (today's Dynamo DefaultWorkerSelector: tiered overlap credit) or classic (overlap_score_weight * prefill + decode, for older Dynamo)")
	fs.Float64Var(&c.OverlapScoreCredit, "router-kv-overlap-score-credit", d.OverlapScoreCredit, "credit per device-cached prompt block against the prefill blocks, as Dynamo's flag (0: ignore device overlap)")
	fs.Float64Var(&c.OverlapScoreCreditDecay, "router-kv-overlap-score-credit-decay", d.OverlapScoreCreditDecay, "shrink the device credit of workers with more active prefill than the least loaded, as Dynamo's flag (0: off)")
	fs.Float64Var(&c.PrefillLoadScale, "router-prefill-load-scale", d.PrefillLoadScale, "multiplier of the prefill blocks left after the credits, as Dynamo's flag")
	fs.Float64Var(&c.DecodeActiveRequestWeight, "router-decode-active-request-weight", d.DecodeActiveRequestWeight, "cost per active request, as Dynamo's flag; kv.load reports carry no request count, so it has no effect here")
	fs.Float64Var(&c.HostCacheHitWeight, "router-host-cache-hit-weight", d.HostCacheHitWeight, "credit per host_pinned (CPU) block past the device prefix, as Dynamo's flag")
	fs.Float64Var(&c.DiskCacheHitWeight, "router-disk-cache-hit-weight", d.DiskCacheHitWeight, "credit per disk or external block past the host prefix, as Dynamo's flag")
	fs.Float64Var(&c.OverlapScoreWeight, "overlap-score-weight", d.OverlapScoreWeight, "weight of prefill cost in the worker choice with --router-cost classic, as older Dynamo's --kv-overlap-score-weight")
	fs.Float64Var(&c.Temperature, "router-temperature", d.Temperature, "softmax temperature of the worker choice, as Dynamo's --router-temperature (0: lowest cost)")
	fs.BoolVar(&c.Spread.Enabled, "spread-wakeups", false, "burst spreading: each wake-up adds decaying virtual load to its chosen worker (departs from the router on purpose)")
	fs.DurationVar(&c.Spread.HalfLife, "spread-half-life", d.Spread.HalfLife, "half-life of burst spreading's virtual load")
}
