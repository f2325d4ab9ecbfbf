package tooltime

import (
	"flag"
	"io"
	"testing"
	"time"
)

func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := DefaultConfig()
	c.RegisterFlags(fs)
	if c != DefaultConfig() {
		t.Fatalf("registering changed the defaults: %+v", c)
	}
	if err := fs.Parse([]string{"--tool-time-default", "45s", "--tool-time-percentile", "0.5", "--tool-time-min-samples", "3"}); err != nil {
		t.Fatal(err)
	}
	if c.Default != 45*time.Second || c.Percentile != 0.5 || c.MinSamples != 3 || c.Window != DefaultWindow {
		t.Fatalf("parsed %+v", c)
	}
}
