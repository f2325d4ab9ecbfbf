package service

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/decide/retention"
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

// TestRetentionBudgetsHostile: budgets of 0, negative and absurdly large,
// and the capacities and page sizes that would overflow the planner's
// sums, are refused by `run`'s flags with a message naming the flag.
// Before, --l3-pin-budget 9223372036854775807 passed --check-config, and
// 100% of --l3-capacity 9223372036854775807 became a negative budget
// (the float64 product converted back): a planner that pinned nothing.
func TestRetentionBudgetsHostile(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--l3-pin-budget", "0"}, `-l3-pin-budget: "0": a budget of 0 pins nothing`},
		{[]string{"--l3-pin-budget", "-5"}, `-l3-pin-budget: "-5": want bytes or a share`},
		{[]string{"--l3-pin-budget", "-5%", "--l3-capacity", "100"}, `-l3-pin-budget: "-5%": want bytes or a share`},
		{[]string{"--l3-pin-budget", "0%", "--l3-capacity", "100"}, `-l3-pin-budget: "0%"`},
		{[]string{"--l3-pin-budget", "9223372036854775807"}, `-l3-pin-budget: "9223372036854775807": more than 1152921504606846976 bytes`},
		{[]string{"--l3-pin-budget", "99999999999999999999"}, "more than 1152921504606846976 bytes"},
		{[]string{"--l3-pin-budget", "1e30"}, `-l3-pin-budget: "1e30": want bytes`},
		{[]string{"--l3-pin-budget", "NaN%", "--l3-capacity", "100"}, `-l3-pin-budget: "NaN%"`},
		{[]string{"--l3-pin-budget", "100%", "--l3-capacity", "9223372036854775807"}, "--l3-capacity 9223372036854775807 is more than 1152921504606846976 bytes"},
		{[]string{"--l3-pin-budget", "50%", "--l3-capacity", "-1"}, "--l3-capacity -1 is negative"},
		{[]string{"--l3-pin-budget", "2000", "--l3-capacity", "1000"}, "--l3-pin-budget 2000 is more than --l3-capacity 1000"},
		{[]string{"--l3-pin-budget", "1e-300%", "--l3-capacity", "1000"}, "of --l3-capacity 1000 is less than a byte"},
		{[]string{"--l3-pin-budget", "1000", "--kv-bytes-per-token", "4611686018427387904"}, "--kv-bytes-per-token 4611686018427387904 is more than 1073741824"},
	} {
		_, err := parseRunFlags(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	// The largest budget accepted is MaxBytes, and a budget equal to the
	// capacity.
	for _, ok := range [][]string{{"--l3-pin-budget", strconv.FormatInt(retention.MaxBytes, 10)},
		{"--l3-pin-budget", "1000", "--l3-capacity", "1000"}, {"--l3-pin-budget", "100%", "--l3-capacity", strconv.FormatInt(retention.MaxBytes, 10)}} {
		cfg, err := parseRunFlags(ok...)
		if err != nil || cfg.Retention == nil || cfg.Retention.WithDefaults().BudgetBytes() <= 0 {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
