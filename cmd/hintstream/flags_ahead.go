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
	var (
		on       = fs.Bool("prefetch-ahead", false, "prefetch a session's predicted next turn without a wake-up header, to the worker the router would pick, at the predicted arrival less the load time at --l3-bandwidth")
		maxWaste = fs.Float64("max-prefetch-waste", ahead.DefaultMaxWaste, "header-free prefetches stop while the bytes they loaded unused exceed this many times the bytes used")
		contexts = fs.Bool("prefetch-ahead-contexts", true, "with --prefetch-ahead, also predict a prompt's context reused across sessions from its reuse gaps")
		warmup   = fs.Int64("prefetch-ahead-warmup", ahead.DefaultWarmupTokens, "tokens' worth of header-free prefetches that may go unused beyond --max-prefetch-waste × used (so the budget can start measuring); 0: none")
	)
	return func(cfg *service.Config) error {
		if !*on {
			return nil
		}
		c := ahead.Config{MaxWaste: *maxWaste, Contexts: *contexts, WarmupTokens: *warmup}
		if *warmup <= 0 {
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
