package tooltime

import "flag"

// RegisterFlags registers the learner's flags on fs, bound to c and set to
// the defaults. Validate checks what was parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Default, "tool-time-default", DefaultDefault, "expected tool time until enough have been observed")
	fs.Float64Var(&c.Percentile, "tool-time-percentile", DefaultPercentile, "percentile of observed tool times used as the expected one")
	fs.IntVar(&c.MinSamples, "tool-time-min-samples", DefaultMinSamples, "observations of a tool needed before its own percentile is used")
}
