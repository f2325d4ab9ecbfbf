package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/hintstream/hintstream/engine"
)

// TestPinRenewMaxFlag: --pin-renew-max 0 means never (NoPinRenewal, the
// explicit off value), a duration caps renewals, a negative one is refused.
func TestPinRenewMaxFlag(t *testing.T) {
	parse := func(args ...string) (engine.Decisions, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		set := decisionFlags(fs)
		if err := fs.Parse(args); err != nil {
			return engine.Decisions{}, err
		}
		var d engine.Decisions
		err := set(&d)
		return d, err
	}
	d, err := parse("--pin-renew-max", "0")
	if err != nil || !d.NoPinRenewal || d.WithDefaults().RenewMax() != 0 {
		t.Fatalf("--pin-renew-max 0: %+v, %v; want renewals off", d, err)
	}
	d, err = parse()
	if err != nil || d.NoPinRenewal || d.WithDefaults().RenewMax() != engine.DefaultPinRenewMax {
		t.Fatalf("default: renew max %v, off %v, %v", d.WithDefaults().RenewMax(), d.NoPinRenewal, err)
	}
	d, err = parse("--pin-renew-max", "90s")
	if err != nil || d.WithDefaults().RenewMax() != 90*time.Second {
		t.Fatalf("--pin-renew-max 90s: %v, %v", d.WithDefaults().RenewMax(), err)
	}
	if _, err := parse("--pin-renew-max", "-1s"); err == nil {
		t.Fatal("negative --pin-renew-max accepted")
	}
}
