// Package tooltime learns, from the response and request streams, how long
// the tools that responses call take to run, so that a tool-call pin lives
// about as long as the conversation is likely to wait.
//
// One observation is the gap between a response that ended with a tool call
// (its completed_at_ms) and the same session's next request (its
// received_at_ms). The estimate for a tool is a high percentile of its most
// recent observations, so that most tool calls finish while the pin holds.
package tooltime

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidConfig marks a Config value the learner cannot use.
var ErrInvalidConfig = errors.New("invalid tooltime config")

// Defaults of Config; a zero field means its default.
const (
	DefaultDefault    = 30 * time.Second
	DefaultPercentile = 0.9
	DefaultMinSamples = 20
	DefaultWindow     = 256
	DefaultMaxTools   = 1024
	DefaultMaxGap     = time.Hour
)

// MaxNameLen is the longest tool name tracked on its own. Longer names are
// treated like names past MaxTools (they feed only the "" bucket), so that
// a hostile name cannot make a map key of any size.
const MaxNameLen = 256

// Config tunes the learner. The zero value of every field means its default,
// so Config{} and DefaultConfig() behave the same.
type Config struct {
	// Default is the expected tool time until a tool (or, failing that, the
	// "" any-tool bucket) has MinSamples observations; once anything was
	// observed, the estimate is never below what was (Provisional).
	// Default 30s; > 0.
	Default time.Duration
	// Percentile of the window taken as the estimate, nearest-rank. A high
	// one, so most tool calls finish within the pin. Default 0.9; in (0, 1].
	Percentile float64
	// MinSamples a bucket needs before its estimate is used. Default 20;
	// >= 1 and <= Window.
	MinSamples int
	// Window is how many of the most recent observations are kept per tool
	// (a ring buffer, so the estimate follows drift). Default 256; >= 1.
	Window int
	// MaxTools bounds the distinct non-empty tool names tracked. Past it, a
	// new name's observations feed only the "" (any tool) bucket. Memory is
	// at most 2 * (MaxTools+1) * Window durations. Default 1024; >= 1.
	MaxTools int
	// MaxGap discards longer gaps (a user who left, not a tool that ran);
	// they are counted by Discarded. Default 1h; > 0.
	MaxGap time.Duration
}

// DefaultConfig returns 30s default, p90, 20 samples, a 256 window, 1024
// tools and a 1h gap limit.
func DefaultConfig() Config {
	return Config{
		Default:    DefaultDefault,
		Percentile: DefaultPercentile,
		MinSamples: DefaultMinSamples,
		Window:     DefaultWindow,
		MaxTools:   DefaultMaxTools,
		MaxGap:     DefaultMaxGap,
	}
}

// Validate reports the first unusable field as an error wrapping
// ErrInvalidConfig. Zero fields are valid: they mean the default.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Default < 0:
		return fmt.Errorf("%w: Default %v must be > 0", ErrInvalidConfig, c.Default)
	case math.IsNaN(c.Percentile) || c.Percentile <= 0 || c.Percentile > 1:
		return fmt.Errorf("%w: Percentile %v must be in (0, 1]", ErrInvalidConfig, c.Percentile)
	case c.MinSamples < 1:
		return fmt.Errorf("%w: MinSamples %d must be >= 1", ErrInvalidConfig, c.MinSamples)
	case c.Window < 1:
		return fmt.Errorf("%w: Window %d must be >= 1", ErrInvalidConfig, c.Window)
	case c.MinSamples > c.Window:
		return fmt.Errorf("%w: MinSamples %d exceeds Window %d, so no tool could ever be learned",
			ErrInvalidConfig, c.MinSamples, c.Window)
	case c.MaxTools < 1:
		return fmt.Errorf("%w: MaxTools %d must be >= 1", ErrInvalidConfig, c.MaxTools)
	case c.MaxGap < 0:
		return fmt.Errorf("%w: MaxGap %v must be > 0", ErrInvalidConfig, c.MaxGap)
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Default == 0 {
		c.Default = d.Default
	}
	if c.Percentile == 0 {
		c.Percentile = d.Percentile
	}
	if c.MinSamples == 0 {
		c.MinSamples = d.MinSamples
	}
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.MaxTools == 0 {
		c.MaxTools = d.MaxTools
	}
	if c.MaxGap == 0 {
		c.MaxGap = d.MaxGap
	}
	return c
}

// normalized is what New runs with: defaults for zero fields, and the
// default for any field Validate would reject, since New cannot fail.
func (c Config) normalized() Config {
	c = c.withDefaults()
	d := DefaultConfig()
	if c.Default < 0 {
		c.Default = d.Default
	}
	if math.IsNaN(c.Percentile) || c.Percentile <= 0 || c.Percentile > 1 {
		c.Percentile = d.Percentile
	}
	if c.MinSamples < 1 {
		c.MinSamples = d.MinSamples
	}
	if c.Window < 1 {
		c.Window = d.Window
	}
	if c.MinSamples > c.Window {
		c.Window = c.MinSamples
	}
	if c.MaxTools < 1 {
		c.MaxTools = d.MaxTools
	}
	if c.MaxGap < 0 {
		c.MaxGap = d.MaxGap
	}
	return c
}
