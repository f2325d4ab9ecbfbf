package schemas

import (
	"flag"
	"io"
	"testing"
)

func TestLimitsRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var l Limits
	l.RegisterFlags(fs)
	if l != DefaultLimits() {
		t.Fatalf("defaults %+v, want %+v", l, DefaultLimits())
	}
	if err := fs.Parse([]string{"--max-tokens", "64", "--max-depth", "4"}); err != nil {
		t.Fatal(err)
	}
	if l.MaxTokens != 64 || l.MaxDepth != 4 || l.MaxBytes != DefaultLimits().MaxBytes {
		t.Fatalf("parsed %+v", l)
	}
}
