package ahead

import (
	"flag"
	"io"
	"testing"
)

func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.RegisterFlags(fs)
	if c.MaxWaste != DefaultMaxWaste || !c.Contexts || c.WarmupTokens != DefaultWarmupTokens {
		t.Fatalf("defaults %+v", c)
	}
	if err := fs.Parse([]string{"--max-prefetch-waste", "0.5", "--prefetch-ahead-contexts=false", "--prefetch-ahead-warmup", "0"}); err != nil {
		t.Fatal(err)
	}
	if c.MaxWaste != 0.5 || c.Contexts || c.WarmupTokens != 0 {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.WithDefaults().Validate(); err != nil {
		t.Fatalf("parsed values refused: %v", err)
	}
}
