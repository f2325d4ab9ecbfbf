package actions

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"
)

func TestTTLRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c TTLConfig
	c.RegisterFlags(fs)
	if c != DefaultTTLConfig() {
		t.Fatalf("defaults %+v, want %+v", c, DefaultTTLConfig())
	}
	if err := fs.Parse([]string{"--pin-headroom", "2", "--pin-min-ttl", "1m", "--pin-max-ttl", "30s"}); err != nil {
		t.Fatal(err)
	}
	if c.Headroom != 2 || c.Min != time.Minute {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); !errors.Is(err, ErrTTLConfig) {
		t.Fatalf("max below min: %v, want ErrTTLConfig", err)
	}
}
