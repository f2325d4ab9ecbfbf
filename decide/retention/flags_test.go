package retention

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"
)

func TestRegisterFlags(t *testing.T) {
	parse := func(args ...string) (Config, GroupConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Config
		var g GroupConfig
		c.RegisterFlags(fs)
		g.RegisterFlags(fs)
		return c, g, fs.Parse(args)
	}
	c, g, err := parse()
	if err != nil || c.BudgetSet() || c.Horizon != DefaultHorizon || c.Interval != DefaultInterval ||
		c.MinProbability != DefaultMinProbability || g.Elector.TTL != DefaultLockTTL {
		t.Fatalf("defaults %+v %+v %v", c, g, err)
	}
	c, _, err = parse("--l3-pin-budget", "40%", "--l3-capacity", "1000", "--retention-horizon", "1m")
	if err != nil || !c.BudgetSet() || c.BudgetShare != 0.4 || c.Budget != 0 || c.Capacity != 1000 || c.Horizon != time.Minute || c.CheckFlags() != nil {
		t.Fatalf("a share: %+v %v", c, err)
	}
	c, _, err = parse("--l3-pin-budget", "4096")
	if err != nil || c.Budget != 4096 || c.BudgetShare != 0 || c.CheckFlags() != nil {
		t.Fatalf("bytes: %+v %v", c, err)
	}
	c, _, err = parse("--l3-pin-budget", "40%")
	if err != nil || !errors.Is(c.CheckFlags(), ErrInvalidOption) {
		t.Fatalf("a share without a capacity: %+v, %v", c, c.CheckFlags())
	}
	for _, bad := range []string{"0", "-5", "0%", "101%", "lots"} {
		if _, _, err := parse("--l3-pin-budget", bad); err == nil {
			t.Errorf("--l3-pin-budget %q accepted", bad)
		}
	}
}
