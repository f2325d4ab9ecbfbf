package consumers

import (
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/hints"
)

// TestNewPinningTakesDecisions: run and replay build their pins with
// NewPinning, so the decisions (TTL, keep-pin, renewal cap, tool times)
// come from the one hints.Decisions, defaults included.
func TestNewPinningTakesDecisions(t *testing.T) {
	p := NewPinning(hints.Decisions{}, PinDeps{Endpoint: "tcp://127.0.0.1:9"})
	if p.TTL != actions.DefaultTTLConfig() || !p.ReleaseOnNextTurn || p.RenewMax != DefaultPinRenewMax ||
		p.Learner == nil || p.Endpoint != "tcp://127.0.0.1:9" {
		t.Fatalf("defaults: %+v", p)
	}
	ttl := actions.TTLConfig{Headroom: 2, Slack: 7 * time.Second, Min: 20 * time.Second, Max: time.Hour}
	p = NewPinning(hints.Decisions{PinTTL: ttl, KeepPinOnNextTurn: true, PinRenewMax: -1}, PinDeps{})
	if p.TTL != ttl || p.ReleaseOnNextTurn || p.RenewMax != 0 {
		t.Fatalf("set: TTL %+v, release %v, renew max %v", p.TTL, p.ReleaseOnNextTurn, p.RenewMax)
	}
}
