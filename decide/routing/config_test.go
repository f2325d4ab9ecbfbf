package routing

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents/index"
)

func TestDefaultConfig(t *testing.T) {
	s := mustSelector(NewSelector(staticWorkers{}, index.New(), nil))
	// Dynamo's KvRouterConfig::default() (lib/kv-router/src/scheduling/
	// config.rs @07a6c9ce3bb096cfaf353fe69ee578e105c6a512), spelled out.
	want := Config{Cost: CostDefault, OverlapScoreCredit: 1, OverlapScoreCreditDecay: 0, PrefillLoadScale: 1,
		DecodeActiveRequestWeight: 0, HostCacheHitWeight: 0.75, DiskCacheHitWeight: 0.25,
		OverlapScoreWeight: 1, Temperature: 0, Spread: SpreadConfig{HalfLife: 2 * time.Second}}
	if got := s.Config(); got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	s = mustSelector(NewSelector(staticWorkers{}, index.New(), nil,
		WithConfig(Config{OverlapScoreWeight: 0.5, Temperature: 0.2, Spread: SpreadConfig{Enabled: true, HalfLife: 3 * time.Second}})))
	if got := s.Config(); got.OverlapScoreWeight != 0.5 || got.Temperature != 0.2 || got.Spread != (SpreadConfig{true, 3 * time.Second}) {
		t.Fatalf("options gave %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{OverlapScoreWeight: math.NaN()},
		{OverlapScoreWeight: -1},
		{OverlapScoreWeight: math.Inf(1)},
		{OverlapScoreWeight: 1, Temperature: -0.1},
		{OverlapScoreWeight: 1, Temperature: math.NaN()},
		{OverlapScoreWeight: 1, Spread: SpreadConfig{Enabled: true, HalfLife: -time.Second}},
		{Cost: "fancy"},
		{HostCacheHitWeight: -0.5},
		{DiskCacheHitWeight: math.NaN()},
		{OverlapScoreCredit: math.Inf(1)},
		{OverlapScoreCreditDecay: -1},
		{PrefillLoadScale: -2},
		{DecodeActiveRequestWeight: math.NaN()},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig", c, err)
		}
	}
}

// TestBadOptionsFail: an unusable setting never reaches the logits:
// NewSelector fails, naming it, and nothing is replaced.
func TestBadOptionsFail(t *testing.T) {
	s, err := NewSelector(staticWorkers{}, index.New(), nil,
		tuned(func(c *Config) { c.OverlapScoreWeight, c.Temperature = math.NaN(), -1 }))
	if !errors.Is(err, ErrInvalidConfig) || s != nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("selector %v, err %v: want ErrInvalidConfig naming the weight", s, err)
	}
	s, err = NewSelector(staticWorkers{}, index.New(), nil, tuned(func(c *Config) { c.Temperature = -1 }))
	if !errors.Is(err, ErrInvalidConfig) || s != nil || !strings.Contains(err.Error(), "temperature -1") {
		t.Fatalf("selector %v, err %v: want ErrInvalidConfig naming the temperature", s, err)
	}
}

// mustSelector is NewSelector for a configuration the test knows is valid.
func mustSelector(s *Selector, err error) *Selector {
	if err != nil {
		panic(err)
	}
	return s
}
