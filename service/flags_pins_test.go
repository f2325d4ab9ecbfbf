package service

import (
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
)

// TestPinFlags: the pin caps and slot timings reach the service's
// config (defaults when not given) and bad values are refused by name.
func TestPinFlags(t *testing.T) {
	parse := parseRunFlags
	c, err := parse()
	if err != nil || c.Decisions.MaxPinKeys != actions.DefaultMaxPinKeys || c.Decisions.MaxPinBytes != actions.DefaultMaxPinBytes ||
		c.PinSlotLinger != pins.DefaultSlotLinger || c.PinSlotMarkerTTL != pins.DefaultSlotMarkerTTL {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = parse("--pin-max-keys", "100", "--pin-max-bytes", "2000", "--pin-slot-linger", "0s", "--pin-slot-marker-ttl", "2s")
	if err != nil || c.Decisions.MaxPinKeys != 100 || c.Decisions.MaxPinBytes != 2000 || c.PinSlotLinger != 0 || c.PinSlotMarkerTTL != 2*time.Second {
		t.Fatalf("set: %+v %v", c, err)
	}
	if pc := c.Decisions.PinConfig(); pc.MaxPinKeys != 100 || pc.MaxPinBytes != 2000 || pc.BudgetTokens != 0 {
		t.Fatalf("pins.Config from the decisions: %+v", pc)
	}
	// The pin budget, a decision flag (replay takes it too).
	c, err = parse("--pin-budget-tokens", "2796202")
	if err != nil || c.Decisions.PinConfig().BudgetTokens != 2796202 {
		t.Fatalf("--pin-budget-tokens 2796202: %d tokens, %v", c.Decisions.PinConfig().BudgetTokens, err)
	}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--pin-max-keys", "0"}, "--pin-max-keys"},
		{[]string{"--pin-max-bytes", "-1"}, "--pin-max-bytes"},
		{[]string{"--pin-slot-linger", "-1s"}, "--pin-slot-linger"},
		{[]string{"--pin-slot-marker-ttl", "500ms"}, "--pin-slot-marker-ttl"},
		{[]string{"--pin-budget-tokens", "-1"}, "--pin-budget-tokens"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%v: want an error naming %s, got %v", tc.args, tc.flag, err)
		}
	}
}
