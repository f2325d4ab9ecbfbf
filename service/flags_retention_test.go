package service

import (
	"testing"
)

func TestRetentionFlags(t *testing.T) {
	parse := parseRunFlags
	if cfg, err := parse(); err != nil || cfg.Retention != nil {
		t.Fatalf("no budget: %v %+v", err, cfg.Retention)
	}
	cfg, err := parse("--l3-pin-budget", "40%", "--l3-capacity", "1000000")
	if err != nil || cfg.Retention == nil || cfg.Retention.WithDefaults().BudgetBytes() != 400000 {
		t.Fatalf("share: %v %+v", err, cfg.Retention)
	}
	if cfg, err = parse("--l3-pin-budget", "5000"); err != nil || cfg.Retention.BudgetBytes() != 5000 {
		t.Fatalf("bytes: %v %+v", err, cfg.Retention)
	}
	for _, bad := range [][]string{{"--l3-pin-budget", "40%"}, {"--l3-pin-budget", "0"}, {"--l3-pin-budget", "150%", "--l3-capacity", "10"},
		{"--l3-pin-budget", "1000000000", "--retention-min-probability", "2"}, {"--l3-pin-budget", "lots"}} {
		if _, err := parse(bad...); err == nil {
			t.Fatalf("%v: accepted", bad)
		}
	}
}
