// Package ahead predicts a session's next turn from what hintstream sees
// on the bus (the gaps between a session's turns, and tool calls with
// the tool class's learned time) and schedules a prefetch of the
// session's context without waiting for a wake-up header: at the
// predicted arrival minus the time the context takes to load from the
// shared store. A waste budget bounds what it may load for nothing.
//
// The Scheduler holds no goroutine and reads no clock: its caller (the
// decision engine) tells it of turns and responses at their event time
// and ticks it, so a replay or a simulation drives it in virtual time
// exactly as a live instance does in wall time.
package ahead

import (
	"errors"
	"fmt"
	"github.com/hintstream/hintstream/schemas"
	"math"
	"time"
)

// ErrInvalidOption wraps every Config error.
var ErrInvalidOption = errors.New("ahead: invalid option")

// Defaults of Config.
const (
	// DefaultMaxWaste: bytes prefetched and never used stay at most this
	// many times the bytes used.
	DefaultMaxWaste = 1.0
	// DefaultWarmupTokens is the waste allowed beyond MaxWaste × used
	// (and at least one prefetch, however large, before any was used),
	// so that the budget can start measuring at all (every ratio is over
	// budget at 0 used): about one long prompt.
	DefaultWarmupTokens = 16 * 1024
	// DefaultHorizon: a turn counts as a session's next only within it;
	// a session idle longer is forgotten.
	DefaultHorizon = 10 * time.Minute
	// DefaultMaxHold is the longest a prefetch is held for its turn
	// (from when it is sent to when it expires): a device's pages are
	// not lent for longer on a guess.
	DefaultMaxHold = 2 * time.Minute
	// DefaultMaxSessions bounds the sessions followed (least recently
	// seen forgotten).
	DefaultMaxSessions = 16384
	// DefaultMaxTokens bounds the prompt tokens kept to prefetch (16M
	// tokens, 64 MiB; least recently seen forgotten first).
	DefaultMaxTokens = 1 << 24
	// DefaultPriorWeight is how many gaps the population's estimate
	// counts for in a session's own (a session with one gap is half its
	// own, half the population's).
	DefaultPriorWeight = 1.0
)

// Config is the header-free prefetch policy.
type Config struct {
	// MaxWaste is --max-prefetch-waste (default DefaultMaxWaste).
	MaxWaste float64
	// WarmupTokens: see DefaultWarmupTokens; 0 takes the default, < 0 none.
	WarmupTokens int64
	// L3Bandwidth (bytes/s) and KVBytesPerToken give a context's load time
	// and its size in bytes.
	L3Bandwidth     float64
	KVBytesPerToken int
	Horizon         time.Duration
	MaxHold         time.Duration
	MaxSessions     int
	MaxTokens       int64
	PriorWeight     float64
	// Contexts also follows each prompt's context across sessions (a
	// re-submitted context is predicted from its reuse gaps), not only
	// sessions.
	Contexts bool
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.MaxWaste == 0 {
		c.MaxWaste = DefaultMaxWaste
	}
	if c.WarmupTokens == 0 {
		c.WarmupTokens = DefaultWarmupTokens
	}
	if c.WarmupTokens < 0 {
		c.WarmupTokens = 0
	}
	if c.L3Bandwidth == 0 {
		c.L3Bandwidth = schemas.DefaultL3Bandwidth
	}
	if c.KVBytesPerToken == 0 {
		c.KVBytesPerToken = schemas.DefaultKVBytesPerToken
	}
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultMaxHold
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.PriorWeight == 0 {
		c.PriorWeight = DefaultPriorWeight
	}
	return c
}

// Validate checks c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.MaxWaste) || math.IsInf(c.MaxWaste, 0) || c.MaxWaste <= 0:
		return fmt.Errorf("%w: max prefetch waste %g, want > 0", ErrInvalidOption, c.MaxWaste)
	case math.IsNaN(c.L3Bandwidth) || math.IsInf(c.L3Bandwidth, 0) || c.L3Bandwidth <= 0:
		return fmt.Errorf("%w: L3 bandwidth %g bytes/s, want > 0", ErrInvalidOption, c.L3Bandwidth)
	case c.KVBytesPerToken < 1:
		return fmt.Errorf("%w: KV bytes per token %d, want >= 1", ErrInvalidOption, c.KVBytesPerToken)
	case c.Horizon <= 0 || c.MaxHold <= 0 || c.MaxHold > c.Horizon:
		return fmt.Errorf("%w: horizon %v, max hold %v: want 0 < max hold <= horizon", ErrInvalidOption, c.Horizon, c.MaxHold)
	case c.MaxSessions < 1 || c.MaxTokens < 1:
		return fmt.Errorf("%w: max sessions %d, max tokens %d, want >= 1", ErrInvalidOption, c.MaxSessions, c.MaxTokens)
	case math.IsNaN(c.PriorWeight) || math.IsInf(c.PriorWeight, 0) || c.PriorWeight < 0:
		return fmt.Errorf("%w: prior weight %g, want >= 0", ErrInvalidOption, c.PriorWeight)
	}
	return nil
}

// LoadTime is how long tokens take to load from the shared store.
func (c Config) LoadTime(tokens int) time.Duration {
	return time.Duration(float64(tokens) * float64(c.KVBytesPerToken) / c.L3Bandwidth * float64(time.Second))
}

// Bytes is the KV size of tokens.
func (c Config) Bytes(tokens int) int64 { return int64(tokens) * int64(c.KVBytesPerToken) }
