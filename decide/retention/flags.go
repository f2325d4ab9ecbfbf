package retention

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/internal/cmdline"
)

// RegisterFlags registers the planner's flags on fs, bound to c and set
// to the defaults. --l3-pin-budget is bytes, or a share of --l3-capacity
// ("40%"); the planner runs when it is set (BudgetSet). KVBytesPerToken
// is not registered here: service.Config.ApplyFlags sets it from --kv-bytes-per-token,
// which sizes the agents' loads too. Validate (after WithDefaults) checks
// what was parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(budgetFlag{c}, "l3-pin-budget", "bytes the retention planner may pin in Mooncake at once (with a unit as --l3-capacity: 200GiB), or a share of --l3-capacity (\"40%\"); empty: no planner, tool-call pins alone")
	cmdline.BytesVar(fs, &c.Capacity, "l3-capacity", 0, "the Mooncake store's capacity in bytes (for a --l3-pin-budget given as a share)")
	fs.DurationVar(&c.Horizon, "retention-horizon", DefaultHorizon, "horizon of the retention planner's reuse estimates")
	fs.DurationVar(&c.Interval, "retention-interval", DefaultInterval, "event time between retention plans; a plan's pins last three intervals")
	fs.Float64Var(&c.MinProbability, "retention-min-probability", DefaultMinProbability, "least estimated chance of reuse within the horizon worth a pin")
}

// BudgetSet reports whether a budget was given (the planner is on).
func (c *Config) BudgetSet() bool { return c.Budget > 0 || c.BudgetShare > 0 }

// MaxBytes bounds --l3-pin-budget and --l3-capacity: 1 EiB, far past
// any store, and far enough below 2⁶³ that the planner's sums of page
// bytes, and a share of the capacity converted from float64, cannot
// overflow (before, --l3-capacity 9223372036854775807 with a share
// made the budget negative: nothing pinned, nothing said).
const MaxBytes = 1 << 60

// MaxKVBytesPerToken bounds --kv-bytes-per-token for the planner: 1 GiB,
// thousands of times a large model's, so that a page's bytes (tokens ×
// this) cannot overflow.
const MaxKVBytesPerToken = 1 << 30

// CheckFlags refuses, naming the flag, a budget the planner cannot keep
// to: a share without a capacity to take it of (it would silently be a
// share of nothing), a negative capacity, a budget or capacity past
// MaxBytes, a byte budget larger than the capacity given, or
// KV bytes per token past MaxKVBytesPerToken. A budget of 0 or below
// is refused by the flag itself.
func (c *Config) CheckFlags() error {
	switch {
	case c.Capacity < 0:
		return fmt.Errorf("%w: --l3-capacity %d is negative", ErrInvalidOption, c.Capacity)
	case c.Capacity > MaxBytes:
		return fmt.Errorf("%w: --l3-capacity %d is more than %d bytes (1 EiB)", ErrInvalidOption, c.Capacity, int64(MaxBytes))
	case c.Budget > MaxBytes:
		return fmt.Errorf("%w: --l3-pin-budget %d is more than %d bytes (1 EiB)", ErrInvalidOption, c.Budget, int64(MaxBytes))
	case c.Budget > 0 && c.Capacity > 0 && c.Budget > c.Capacity:
		return fmt.Errorf("%w: --l3-pin-budget %d is more than --l3-capacity %d: the planner would pin more than the store holds", ErrInvalidOption, c.Budget, c.Capacity)
	case c.Budget == 0 && c.BudgetShare > 0 && c.Capacity <= 0:
		return fmt.Errorf("%w: --l3-pin-budget %g%% is a share: --l3-capacity must be set", ErrInvalidOption, c.BudgetShare*100)
	case c.Budget == 0 && c.BudgetShare > 0 && c.BudgetBytes() < 1:
		return fmt.Errorf("%w: --l3-pin-budget %g%% of --l3-capacity %d is less than a byte", ErrInvalidOption, c.BudgetShare*100, c.Capacity)
	case c.KVBytesPerToken > MaxKVBytesPerToken:
		return fmt.Errorf("%w: --kv-bytes-per-token %d is more than %d (1 GiB)", ErrInvalidOption, c.KVBytesPerToken, MaxKVBytesPerToken)
	}
	return nil
}

// budgetFlag parses --l3-pin-budget into Budget or BudgetShare.
type budgetFlag struct{ c *Config }

func (b budgetFlag) String() string {
	if b.c == nil {
		return ""
	}
	switch {
	case b.c.Budget > 0:
		return strconv.FormatInt(b.c.Budget, 10)
	case b.c.BudgetShare > 0:
		return strconv.FormatFloat(b.c.BudgetShare*100, 'g', -1, 64) + "%"
	}
	return ""
}

func (b budgetFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q: want bytes or a share in (0%%, 100%%]", s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(v > 0 && v <= 100) {
			return bad
		}
		b.c.Budget, b.c.BudgetShare = 0, v/100
		return nil
	}
	v, err := cmdline.ParseBytes(s)
	switch {
	case errors.Is(err, strconv.ErrRange) || v > MaxBytes:
		return fmt.Errorf("%q: more than %d bytes (1 EiB)", s, int64(MaxBytes))
	case err != nil || v < 0:
		return bad
	case v == 0:
		// Zero would be a planner that pins nothing, which is no planner.
		return fmt.Errorf("%q: a budget of 0 pins nothing; leave the flag unset to turn the retention planner off", s)
	}
	b.c.Budget, b.c.BudgetShare = v, 0
	return nil
}

// RegisterFlags registers the group's lock flags on fs, bound to g and
// set to the defaults.
func (g *GroupConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&g.Elector.TTL, "retention-lock-ttl", DefaultLockTTL, "TTL of the retention planner lock: a leader that stops renewing it is replaced within this (same on every member)")
	fs.StringVar(&g.Elector.Member, "retention-member", "", "this member's name in the retention planner lock; empty: the host name and a random suffix")
}
