package service

import (
	"errors"
	"strings"
	"testing"
)

// TestConfigValidate: the defaults validate; each whole-config rule fails
// with ErrInvalidConfig naming the flag that sets the field; Start refuses
// an invalid config before connecting to anything.
func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Defaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		cfg  Config
		flag string
	}{
		{Config{Pprof: true}, "--pprof"},
		{Config{CurveClientPublicKey: "x"}, "--curve-public-key"},
		{Config{Models: []string{"a", ""}}, "--models"},
		{Config{MaxEndpoints: 1 << 30}, "--max-endpoints"},
	} {
		err := tc.cfg.Defaults().Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.flag)
		}
		tc.cfg.EmbeddedDir = t.TempDir() // were it to start, not in the package directory
		if err := New(tc.cfg).Start(t.Context()); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Start with %s wrong: %v, want ErrInvalidConfig", tc.flag, err)
		}
	}
}
