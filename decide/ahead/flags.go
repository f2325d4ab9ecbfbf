package ahead

import "flag"

// RegisterFlags registers the header-free prefetch's policy flags on fs,
// bound to c and set to the defaults. On the command line
// --prefetch-ahead-warmup 0 means none, which is WarmupTokens < 0 in a
// Config (0 there is the default): service.Config.ApplyFlags maps it. L3Bandwidth and
// KVBytesPerToken come from --l3-bandwidth and --kv-bytes-per-token,
// which size the agents' loads too. Validate (after WithDefaults) checks
// what was parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.MaxWaste, "max-prefetch-waste", DefaultMaxWaste, "header-free prefetches stop while the bytes they loaded unused exceed this many times the bytes used")
	fs.BoolVar(&c.Contexts, "prefetch-ahead-contexts", true, "with --prefetch-ahead, also predict a prompt's context reused across sessions from its reuse gaps")
	fs.Int64Var(&c.WarmupTokens, "prefetch-ahead-warmup", DefaultWarmupTokens, "tokens' worth of header-free prefetches that may go unused beyond --max-prefetch-waste × used (so the budget can start measuring); 0: none")
}
