package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/kvevents/index"
)

func TestDecisionsDefaultsAndValidate(t *testing.T) {
	d := Decisions{}.WithDefaults()
	if d.Routing == nil || *d.Routing != routing.DefaultConfig() || d.PrefetchTTL != DefaultPrefetchTTL ||
		d.PinTTL != actions.DefaultTTLConfig() || d.ToolTime != tooltime.DefaultConfig() ||
		d.PinRenewMax != DefaultPinRenewMax || d.RenewMax() != DefaultPinRenewMax {
		t.Fatalf("defaults %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if off := (Decisions{NoPinRenewal: true}).WithDefaults(); off.RenewMax() != 0 || off.PinConfig().RenewMax != 0 {
		t.Fatalf("NoPinRenewal renews for %v, want never (0)", off.RenewMax())
	}
	if err := (Decisions{PinRenewMax: -1}).WithDefaults().Validate(); err == nil {
		t.Fatal("negative PinRenewMax accepted")
	}
	kept := Decisions{PrefetchTTL: time.Minute, KeepPinOnNextTurn: true}.WithDefaults()
	if kept.PrefetchTTL != time.Minute || !kept.KeepPinOnNextTurn {
		t.Fatalf("set fields changed: %+v", kept)
	}
	bad := Decisions{}.WithDefaults()
	bad.PinTTL.Headroom = 0.5
	if err := bad.Validate(); !errors.Is(err, actions.ErrTTLConfig) {
		t.Fatalf("headroom 0.5: %v, want ErrTTLConfig", err)
	}
	rc := routing.DefaultConfig()
	rc.Temperature = -1
	if err := (Decisions{Routing: &rc}).WithDefaults().Validate(); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Fatalf("negative temperature: %v, want routing.ErrInvalidConfig", err)
	}
	if err := (Decisions{Holding: index.HoldingConfig{MaxWorkers: -1}}).WithDefaults().Validate(); err == nil {
		t.Fatal("negative holding bound accepted")
	}
}
