package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/hintstream/hintstream/ahead"
	"github.com/hintstream/hintstream/service"
)

// aheadFlags registers the header-free prefetch flags and returns what
// validates them into a service.Config after parsing. Off by default, so
// that hintstream prefetches only on a wake-up header unless asked. Load
// time and bytes come from --l3-bandwidth and --kv-bytes-per-token,
// which agentFlags defines once (run registers it first).
func aheadFlags(fs *flag.FlagSet) func(*service.Config) error {
	on := fs.Bool("prefetch-ahead", false, "prefetch a session's predicted next turn without a wake-up header, to the worker the router would pick, at the predicted arrival less the load time at --l3-bandwidth")
	var policy ahead.Config
	policy.RegisterFlags(fs)
	return func(cfg *service.Config) error {
		if !*on {
			return nil
		}
		c := policy
		if c.WarmupTokens <= 0 {
			c.WarmupTokens = -1 // none (0 is the default in a Config)
		}
		if f := fs.Lookup("l3-bandwidth"); f != nil {
			gbps, err := strconv.ParseFloat(f.Value.String(), 64)
			if err != nil {
				return fmt.Errorf("--l3-bandwidth: %w", err)
			}
			c.L3Bandwidth = gbps * 1e9
		}
		if f := fs.Lookup("kv-bytes-per-token"); f != nil {
			v, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return fmt.Errorf("--kv-bytes-per-token: %w", err)
			}
			c.KVBytesPerToken = v
		}
		if err := c.WithDefaults().Validate(); err != nil {
			return fmt.Errorf("header-free prefetch: %w", err)
		}
		cfg.Ahead = &c
		return nil
	}
}
