package actions

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxPinTTL is Mooncake's maximum soft-pin TTL (soft_pin_ttl_ms). No pin
// is ever sent for longer.
const MaxPinTTL = 24 * time.Hour

// TTLConfig turns the expected time until a pinned prefix is needed again
// (the tool call's duration) into a pin TTL: long enough to cover a tool
// that runs late, short enough that abandoned conversations don't hold
// store memory.
type TTLConfig struct {
	Headroom float64       // multiplies the expected time; default 1.5, must be >= 1
	Slack    time.Duration // added after Headroom; default 5s, must be >= 0
	Min      time.Duration // default 10s, must be > 0
	Max      time.Duration // default 24h; must be in [Min, MaxPinTTL]
}

// DefaultTTLConfig returns Headroom 1.5, Slack 5s, Min 10s, Max 24h.
func DefaultTTLConfig() TTLConfig {
	return TTLConfig{Headroom: 1.5, Slack: 5 * time.Second, Min: 10 * time.Second, Max: MaxPinTTL}
}

// ErrTTLConfig is matched (errors.Is) by every error of TTLConfig.Validate.
var ErrTTLConfig = errors.New("actions: invalid ttl config")

// Validate reports the first field out of its documented range.
func (c TTLConfig) Validate() error {
	switch {
	case math.IsNaN(c.Headroom) || math.IsInf(c.Headroom, 0) || c.Headroom < 1:
		// Below 1 a pin would expire before the tool is expected to return.
		return fmt.Errorf("%w: headroom %v must be a finite number >= 1", ErrTTLConfig, c.Headroom)
	case c.Slack < 0:
		return fmt.Errorf("%w: slack %v is negative", ErrTTLConfig, c.Slack)
	case c.Min <= 0:
		return fmt.Errorf("%w: min %v must be positive", ErrTTLConfig, c.Min)
	case c.Max < c.Min || c.Max > MaxPinTTL:
		return fmt.Errorf("%w: max %v must be in [min %v, %v]", ErrTTLConfig, c.Max, c.Min, MaxPinTTL)
	}
	return nil
}

// TTL returns clamp(expected*Headroom + Slack, Min, Max), never above
// MaxPinTTL. A negative expected counts as 0. It never returns less than
// 1ms, even for a config that fails Validate, because a TTL of 0 would
// encode as a release.
func (c TTLConfig) TTL(expected time.Duration) time.Duration {
	hi := c.Max
	if hi <= 0 || hi > MaxPinTTL {
		hi = MaxPinTTL
	}
	lo := max(c.Min, time.Millisecond)
	lo = min(lo, hi)
	// In float64 so that a huge expected time or headroom saturates
	// instead of overflowing int64.
	d := float64(max(expected, 0))*c.Headroom + float64(c.Slack)
	switch {
	case math.IsNaN(d) || d < float64(lo):
		return lo
	case d > float64(hi):
		return hi
	}
	return time.Duration(d)
}

// Deadline returns how long the sender may keep retrying a pin of ttl:
// 10% of ttl, at least 1s and at most 30s. Unlike a prefetch, which is
// worthless once its request arrives, a pin sent late still covers most
// of its TTL, so it is worth retrying for a while; but not for so long
// that the prefix it protects has already been evicted.
func (c TTLConfig) Deadline(ttl time.Duration) time.Duration {
	return min(max(ttl/10, time.Second), 30*time.Second)
}
