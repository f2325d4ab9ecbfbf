package routing

import (
	"errors"
	"flag"
	"io"
	"testing"
)

// RegisterFlags gives Dynamo's router defaults, parses Dynamo's flag
// names, and what Validate refuses is refused.
func TestRegisterFlags(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Config
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			return Config{}, err
		}
		return c, c.Validate()
	}
	c, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultConfig(); c != d {
		t.Fatalf("defaults %+v, want Dynamo's %+v", c, d)
	}
	if c.Cost != CostDefault || c.HostCacheHitWeight != 0.75 || c.DiskCacheHitWeight != 0.25 || c.PrefillLoadScale != 1 ||
		c.OverlapScoreCreditDecay != 0 || c.DecodeActiveRequestWeight != 0 {
		t.Fatalf("defaults %+v, want Dynamo's", c)
	}
	c, err = parse("--router-cost", "classic", "--router-host-cache-hit-weight", "0.5", "--router-kv-overlap-score-credit-decay", "1",
		"--router-temperature", "0.3", "--spread-wakeups")
	if err != nil || c.Cost != CostClassic || c.HostCacheHitWeight != 0.5 || c.OverlapScoreCreditDecay != 1 ||
		c.Temperature != 0.3 || !c.Spread.Enabled {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	if _, err := parse("--router-cost", "fancy"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("--router-cost fancy: %v, want ErrInvalidConfig", err)
	}
	if _, err := parse("--router-disk-cache-hit-weight", "-1"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative weight: %v, want ErrInvalidConfig", err)
	}
}
