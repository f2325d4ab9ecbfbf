package pins

import (
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
)

// TestNewTakesConfig: run and replay build their pins with New (through
// engine.NewEngine), so TTL, keep-pin, the renewal cap and tool times come
// from one configuration, defaults included.
func TestNewTakesConfig(t *testing.T) {
	p := New(Config{ReleaseOnNextTurn: true, RenewMax: 10 * time.Minute}, Deps{Endpoint: "tcp://127.0.0.1:9"})
	if p.TTL != actions.DefaultTTLConfig() || !p.ReleaseOnNextTurn || p.RenewMax != 10*time.Minute ||
		p.Learner == nil || p.Endpoint != "tcp://127.0.0.1:9" {
		t.Fatalf("defaults: %+v", p)
	}
	ttl := actions.TTLConfig{Headroom: 2, Slack: 7 * time.Second, Min: 20 * time.Second, Max: time.Hour}
	p = New(Config{TTL: ttl}, Deps{})
	if p.TTL != ttl || p.ReleaseOnNextTurn || p.RenewMax != 0 {
		t.Fatalf("set: TTL %+v, release %v, renew max %v", p.TTL, p.ReleaseOnNextTurn, p.RenewMax)
	}
}
