package actions_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
)

func TestTTLConfigDefaults(t *testing.T) {
	c := actions.DefaultTTLConfig()
	want := actions.TTLConfig{Headroom: 1.5, Slack: 5 * time.Second, Min: 10 * time.Second, Max: 24 * time.Hour}
	if c != want {
		t.Fatalf("DefaultTTLConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTTLConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*actions.TTLConfig){
		"headroom below 1": func(c *actions.TTLConfig) { c.Headroom = 0.9 },
		"headroom NaN":     func(c *actions.TTLConfig) { c.Headroom = math.NaN() },
		"headroom inf":     func(c *actions.TTLConfig) { c.Headroom = math.Inf(1) },
		"negative slack":   func(c *actions.TTLConfig) { c.Slack = -time.Second },
		"zero min":         func(c *actions.TTLConfig) { c.Min = 0 },
		"max below min":    func(c *actions.TTLConfig) { c.Max = 5 * time.Second },
		"max over 24h":     func(c *actions.TTLConfig) { c.Max = 25 * time.Hour },
	} {
		c := actions.DefaultTTLConfig()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, actions.ErrTTLConfig) {
			t.Errorf("%s: Validate() = %v, want ErrTTLConfig", name, err)
		}
	}
	c := actions.TTLConfig{Headroom: 1, Min: time.Minute, Max: time.Minute}
	if err := c.Validate(); err != nil {
		t.Errorf("min == max, no slack: %v", err)
	}
}

func TestTTL(t *testing.T) {
	def := actions.DefaultTTLConfig()
	for _, c := range []struct {
		name     string
		cfg      actions.TTLConfig
		expected time.Duration
		want     time.Duration
	}{
		{"zero expected: 0·1.5+5s < min", def, 0, 10 * time.Second},
		{"negative expected counts as 0", def, -time.Hour, 10 * time.Second},
		{"2s·1.5+5s = 8s < min", def, 2 * time.Second, 10 * time.Second},
		{"60s·1.5+5s", def, time.Minute, 95 * time.Second},
		{"65s·1.5+5s", def, 65 * time.Second, 102500 * time.Millisecond},
		{"20h·1.5+5s > 24h", def, 20 * time.Hour, 24 * time.Hour},
		{"huge expected saturates", def, math.MaxInt64, 24 * time.Hour},
		{"custom max", actions.TTLConfig{Headroom: 2, Slack: 0, Min: time.Second, Max: time.Hour}, 40 * time.Minute, time.Hour},
		{"max above 24h is capped", actions.TTLConfig{Headroom: 1, Min: time.Second, Max: 48 * time.Hour}, 30 * time.Hour, 24 * time.Hour},
		{"zero config never releases", actions.TTLConfig{}, 0, time.Millisecond},
		{"zero config, max is 24h", actions.TTLConfig{Headroom: 1}, 25 * time.Hour, 24 * time.Hour},
	} {
		if got := c.cfg.TTL(c.expected); got != c.want {
			t.Errorf("%s: TTL(%v) = %v, want %v", c.name, c.expected, got, c.want)
		}
	}
}

func TestTTLDeadline(t *testing.T) {
	c := actions.DefaultTTLConfig()
	for _, tc := range []struct{ ttl, want time.Duration }{
		{0, time.Second},                // floor
		{5 * time.Second, time.Second},  // 0.5s → floor 1s
		{10 * time.Second, time.Second}, // exactly 10%
		{95 * time.Second, 9500 * time.Millisecond},
		{300 * time.Second, 30 * time.Second}, // exactly the cap
		{24 * time.Hour, 30 * time.Second},    // 2.4h → cap 30s
	} {
		if got := c.Deadline(tc.ttl); got != tc.want {
			t.Errorf("Deadline(%v) = %v, want %v", tc.ttl, got, tc.want)
		}
	}
}
