package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/hintstream/hintstream/routing"
)

func TestRouterFlags(t *testing.T) {
	parse := func(args ...string) (routing.Config, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		apply := routerFlags(fs)
		if err := fs.Parse(args); err != nil {
			return routing.Config{}, err
		}
		c := routing.Config{OverlapScoreWeight: 1}
		return c, apply(&c)
	}
	c, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	d := routing.DefaultConfig()
	if c.Cost != routing.CostDefault || c.OverlapScoreCredit != d.OverlapScoreCredit || c.HostCacheHitWeight != 0.75 ||
		c.DiskCacheHitWeight != 0.25 || c.PrefillLoadScale != 1 || c.OverlapScoreCreditDecay != 0 || c.DecodeActiveRequestWeight != 0 {
		t.Fatalf("defaults %+v, want Dynamo's", c)
	}
	c, err = parse("--router-cost", "classic", "--router-host-cache-hit-weight", "0.5", "--router-kv-overlap-score-credit-decay", "1")
	if err != nil || c.Cost != routing.CostClassic || c.HostCacheHitWeight != 0.5 || c.OverlapScoreCreditDecay != 1 {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	if _, err := parse("--router-cost", "fancy"); err == nil {
		t.Fatal("--router-cost fancy accepted")
	}
	if _, err := parse("--router-disk-cache-hit-weight", "-1"); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Fatalf("negative weight: %v, want ErrInvalidConfig", err)
	}
}
