package routing

import "time"

// tuned is DefaultConfig changed by f, as one Option. The per-field
// options (WithTemperature, WithCost, ...) had callers only in tests and
// duplicated WithConfig; they went with issue 12.
func tuned(f func(*Config)) Option {
	c := DefaultConfig()
	f(&c)
	return WithConfig(c)
}

// spreading turns burst spreading on with half-life hl (<= 0: the
// default), over DefaultConfig.
func spreading(hl time.Duration) Option {
	if hl <= 0 {
		hl = DefaultSpreadHalfLife
	}
	return tuned(func(c *Config) { c.Spread = SpreadConfig{Enabled: true, HalfLife: hl} })
}
