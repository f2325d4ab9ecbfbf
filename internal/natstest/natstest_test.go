package natstest

import (
	"testing"
	"time"
)

func TestParseScale(t *testing.T) {
	for _, c := range []struct {
		v      string
		raceOn bool
		want   float64
	}{{"", false, 2}, {"", true, 4}, {"1", true, 1}, {"2.5", false, 2.5}, {"10", true, 10}} {
		if got, err := parseScale(c.v, c.raceOn); err != nil || got != c.want {
			t.Errorf("parseScale(%q, race %v) = %v, %v; want %v", c.v, c.raceOn, got, err, c.want)
		}
	}
	for _, v := range []string{"0", "0.5", "-3", "x", "NaN", "Inf", "1s"} {
		if got, err := parseScale(v, false); err == nil {
			t.Errorf("parseScale(%q) = %v, want an error", v, got)
		}
	}
}

func TestWithinNeverShortens(t *testing.T) {
	if d := Within(10 * time.Second); d < 10*time.Second {
		t.Fatalf("Within(10s) = %v", d)
	}
}
