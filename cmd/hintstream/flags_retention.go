package main

import (
	"flag"
	"fmt"
	"strconv"

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
		rc    retention.Config
		gc    retention.GroupConfig
		group = fs.Bool("retention-group", true, "one retention planner for the consumer group: members relay what they observe on core NATS and only the holder of a KV lock sends pins; false: each member plans alone over its share of the requests")
	)
	rc.RegisterFlags(fs)
	gc.RegisterFlags(fs)
	return func(cfg *service.Config) error {
		if !rc.BudgetSet() {
			return nil
		}
		if err := rc.CheckShare(); err != nil {
			return err
		}
		rc.KVBytesPerToken = schemas.DefaultKVBytesPerToken
		if f := fs.Lookup("kv-bytes-per-token"); f != nil {
			v, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return fmt.Errorf("--kv-bytes-per-token: %w", err)
			}
			rc.KVBytesPerToken = v
		}
		if err := rc.WithDefaults().Validate(); err != nil {
			return fmt.Errorf("retention planner: %w", err)
		}
		planner := rc
		cfg.Retention = &planner
		if *group {
			g := gc
			check := g
			if check.Elector.Member == "" {
				check.Elector.Member = "check"
			}
			if err := check.WithDefaults().Validate(); err != nil {
				return fmt.Errorf("retention planner group: %w", err)
			}
			cfg.RetentionGroup = &g
		}
		return nil
	}
}
