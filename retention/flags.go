package retention

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// RegisterFlags registers the planner's flags on fs, bound to c and set
// to the defaults. --l3-pin-budget is bytes, or a share of --l3-capacity
// ("40%"); the planner runs when it is set (BudgetSet). KVBytesPerToken
// is not registered here: service.Config.ApplyFlags sets it from --kv-bytes-per-token,
// which sizes the agents' loads too. Validate (after WithDefaults) checks
// what was parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(budgetFlag{c}, "l3-pin-budget", "bytes the retention planner may pin in Mooncake at once, or a share of --l3-capacity (\"40%\"); empty: no planner, tool-call pins alone")
	fs.Int64Var(&c.Capacity, "l3-capacity", 0, "the Mooncake store's capacity in bytes (for a --l3-pin-budget given as a share)")
	fs.DurationVar(&c.Horizon, "retention-horizon", DefaultHorizon, "horizon of the retention planner's reuse estimates")
	fs.DurationVar(&c.Interval, "retention-interval", DefaultInterval, "event time between retention plans; a plan's pins last three intervals")
	fs.Float64Var(&c.MinProbability, "retention-min-probability", DefaultMinProbability, "least estimated chance of reuse within the horizon worth a pin")
}

// BudgetSet reports whether a budget was given (the planner is on).
func (c *Config) BudgetSet() bool { return c.Budget > 0 || c.BudgetShare > 0 }

// CheckShare refuses a budget given as a share without a capacity to
// take it of: it would silently be a share of nothing.
func (c *Config) CheckShare() error {
	if c.Budget == 0 && c.BudgetShare > 0 && c.Capacity <= 0 {
		return fmt.Errorf("%w: --l3-pin-budget %g%% is a share: --l3-capacity must be set", ErrInvalidOption, c.BudgetShare*100)
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
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return bad
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
