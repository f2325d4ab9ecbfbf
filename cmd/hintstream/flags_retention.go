package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/retention"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
)

// retentionFlags registers the retention planner's run flags and returns
// the function that validates them into a service.Config after parsing.
// The planner runs when --l3-pin-budget is set. It sizes a page with
// --kv-bytes-per-token, which agentFlags defines once for both (run
// registers agentFlags first).
func retentionFlags(fs *flag.FlagSet) func(*service.Config) error {
	var (
		budget   = fs.String("l3-pin-budget", "", "bytes the retention planner may pin in Mooncake at once, or a share of --l3-capacity (\"40%\"); empty: no planner, tool-call pins alone")
		capacity = fs.Int64("l3-capacity", 0, "the Mooncake store's capacity in bytes (for a --l3-pin-budget given as a share)")
		horizon  = fs.Duration("retention-horizon", retention.DefaultHorizon, "horizon of the retention planner's reuse estimates")
		interval = fs.Duration("retention-interval", retention.DefaultInterval, "event time between retention plans; a plan's pins last three intervals")
		minP     = fs.Float64("retention-min-probability", retention.DefaultMinProbability, "least estimated chance of reuse within the horizon worth a pin")
		group    = fs.Bool("retention-group", true, "one retention planner for the consumer group: members relay what they observe on core NATS and only the holder of a KV lock sends pins; false: each member plans alone over its share of the requests")
		lockTTL  = fs.Duration("retention-lock-ttl", retention.DefaultLockTTL, "TTL of the retention planner lock: a leader that stops renewing it is replaced within this (same on every member)")
		member   = fs.String("retention-member", "", "this member's name in the retention planner lock; empty: the host name and a random suffix")
	)
	return func(cfg *service.Config) error {
		if *budget == "" {
			return nil
		}
		kvBytes := schemas.DefaultKVBytesPerToken
		if f := fs.Lookup("kv-bytes-per-token"); f != nil {
			v, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return fmt.Errorf("--kv-bytes-per-token: %w", err)
			}
			kvBytes = v
		}
		rc := retention.Config{Capacity: *capacity, KVBytesPerToken: kvBytes, Horizon: *horizon, Interval: *interval,
			MinProbability: *minP}
		if pct, ok := strings.CutSuffix(strings.TrimSpace(*budget), "%"); ok {
			v, err := strconv.ParseFloat(pct, 64)
			if err != nil || !(v > 0 && v <= 100) {
				return fmt.Errorf("--l3-pin-budget %q: want bytes or a share in (0%%, 100%%]", *budget)
			}
			if *capacity <= 0 {
				return fmt.Errorf("--l3-pin-budget %q is a share: --l3-capacity must be set", *budget)
			}
			rc.BudgetShare = v / 100
		} else {
			v, err := strconv.ParseInt(strings.TrimSpace(*budget), 10, 64)
			if err != nil || v <= 0 {
				return fmt.Errorf("--l3-pin-budget %q: want bytes or a share in (0%%, 100%%]", *budget)
			}
			rc.Budget = v
		}
		if err := rc.WithDefaults().Validate(); err != nil {
			return fmt.Errorf("retention planner: %w", err)
		}
		cfg.Retention = &rc
		if *group {
			gc := retention.GroupConfig{Elector: retention.ElectorConfig{Member: *member, TTL: *lockTTL}}
			check := gc
			if check.Elector.Member == "" {
				check.Elector.Member = "check"
			}
			if err := check.WithDefaults().Validate(); err != nil {
				return fmt.Errorf("retention planner group: %w", err)
			}
			cfg.RetentionGroup = &gc
		}
		return nil
	}
}
