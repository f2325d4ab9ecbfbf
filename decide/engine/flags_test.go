package engine

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// parseDecisionFlags parses args with RegisterFlags' flags and completes
// the Decisions with ApplyFlags.
func parseDecisionFlags(args ...string) (Decisions, error) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d Decisions
	d.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Decisions{}, err
	}
	return d, d.ApplyFlags()
}

// TestPinRenewMaxFlag: --pin-renew-max 0 means never (NoPinRenewal, the
// explicit off value), a duration caps renewals, a negative one is refused.
func TestPinRenewMaxFlag(t *testing.T) {
	parse := parseDecisionFlags
	d, err := parse("--pin-renew-max", "0")
	if err != nil || !d.NoPinRenewal || d.WithDefaults().RenewMax() != 0 {
		t.Fatalf("--pin-renew-max 0: %+v, %v; want renewals off", d, err)
	}
	d, err = parse()
	if err != nil || d.NoPinRenewal || d.WithDefaults().RenewMax() != DefaultPinRenewMax {
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

// RegisterFlags binds the decision flags to the Decisions' fields and
// ApplyFlags completes them; a bad value wraps ErrInvalidFlag.
func TestDecisionsRegisterFlags(t *testing.T) {
	d, err := parseDecisionFlags("--prefetch-ttl", "3s", "--keep-pin-on-next-turn", "--holding-workers", "7", "--holding-blocks", "9",
		"--router-temperature", "0.5", "--index-max-blocks", "100")
	if err != nil || d.PrefetchTTL != 3*time.Second || !d.KeepPinOnNextTurn || d.Holding.MaxWorkers != 7 ||
		d.Holding.MaxBlocksPerWorker != 9 || d.Routing == nil || d.Routing.Temperature != 0.5 || len(d.IndexOptions) != 5 {
		t.Fatalf("parsed %+v, %v", d, err)
	}
	if _, err := parseDecisionFlags("--overlap-jump", "0"); !errors.Is(err, ErrInvalidFlag) || !strings.Contains(err.Error(), "--overlap-jump") {
		t.Fatalf("--overlap-jump 0: %v", err)
	}
}
