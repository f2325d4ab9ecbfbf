package simulate

import "github.com/hintstream/hintstream/decide/retention"

// plannerConfig is the retention planner of a run: the store's capacity
// is the run's L3 in bytes (pages × tokens × KV bytes per token), the
// budget the planner's default share of it.
func plannerConfig(cfg Config) *retention.Config {
	bs := cfg.Workload.BlockSize
	return &retention.Config{Capacity: int64(cfg.L3Blocks) * int64(bs) * int64(cfg.KVBytesPerToken),
		KVBytesPerToken: cfg.KVBytesPerToken}
}
