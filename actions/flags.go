package actions

import "flag"

// RegisterFlags registers the pin TTL's flags on fs, bound to c and set to
// DefaultTTLConfig. Validate checks what was parsed.
func (c *TTLConfig) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultTTLConfig()
	fs.Float64Var(&c.Headroom, "pin-headroom", d.Headroom, "pin TTL = expected tool time × this + --pin-slack")
	fs.DurationVar(&c.Slack, "pin-slack", d.Slack, "added to every pin TTL")
	fs.DurationVar(&c.Min, "pin-min-ttl", d.Min, "shortest pin TTL")
	fs.DurationVar(&c.Max, "pin-max-ttl", d.Max, "longest pin TTL (Mooncake's soft-pin maximum is 24h)")
}
