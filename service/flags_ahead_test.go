package service

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/decide/ahead"
	"github.com/hintstream/hintstream/schemas"
)

func TestAheadFlags(t *testing.T) {
	parse := parseRunFlags
	if cfg, err := parse("--max-prefetch-waste", "2"); err != nil || cfg.Ahead != nil {
		t.Fatalf("off by default: %v %+v", err, cfg.Ahead)
	}
	cfg, err := parse("--prefetch-ahead", "--l3-bandwidth", "25", "--kv-bytes-per-token", "1000", "--max-prefetch-waste", "0.5")
	if err != nil || cfg.Ahead == nil || cfg.Ahead.L3Bandwidth != 25e9 || cfg.Ahead.KVBytesPerToken != 1000 ||
		cfg.Ahead.MaxWaste != 0.5 || !cfg.Ahead.Contexts {
		t.Fatalf("on: %v %+v", err, cfg.Ahead)
	}
	if cfg, err = parse("--prefetch-ahead"); err != nil || cfg.Ahead.L3Bandwidth != schemas.DefaultL3Bandwidth {
		t.Fatalf("default bandwidth: %v %+v", err, cfg.Ahead)
	}
	if _, err := parse("--prefetch-ahead", "--max-prefetch-waste", "-1"); !errors.Is(err, ahead.ErrInvalidOption) {
		t.Fatalf("negative waste: %v", err)
	}
}
