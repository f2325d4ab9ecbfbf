package service

import (
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/retention"
)

// With the planner on, the group is on by default (a lone member leads at
// once); --retention-group=false keeps each member planning alone; a lock
// TTL JetStream cannot hold is refused.
func TestRetentionGroupFlags(t *testing.T) {
	parse := parseRunFlags
	if cfg, err := parse(); err != nil || cfg.RetentionGroup != nil {
		t.Fatalf("planner off: %v, group %+v", err, cfg.RetentionGroup)
	}
	cfg, err := parse("--l3-pin-budget", "5000")
	if err != nil || cfg.RetentionGroup == nil || cfg.RetentionGroup.Elector.TTL != retention.DefaultLockTTL {
		t.Fatalf("default: %v, group %+v", err, cfg.RetentionGroup)
	}
	cfg, err = parse("--l3-pin-budget", "5000", "--retention-lock-ttl", "3s", "--retention-member", "m1")
	if err != nil || cfg.RetentionGroup.Elector.TTL != 3*time.Second || cfg.RetentionGroup.Elector.Member != "m1" {
		t.Fatalf("set: %v, group %+v", err, cfg.RetentionGroup)
	}
	if cfg, err = parse("--l3-pin-budget", "5000", "--retention-group=false"); err != nil || cfg.RetentionGroup != nil || cfg.Retention == nil {
		t.Fatalf("off: %v, group %+v", err, cfg.RetentionGroup)
	}
	if _, err := parse("--l3-pin-budget", "5000", "--retention-lock-ttl", "10ms"); !errors.Is(err, retention.ErrInvalidOption) {
		t.Fatalf("10ms lock TTL: %v", err)
	}
}
