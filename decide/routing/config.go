package routing

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidConfig marks a Config value the selector cannot use.
var ErrInvalidConfig = errors.New("invalid routing config")

// CostModel names the cost function of the worker choice.
type CostModel string

const (
	// CostDefault is today's Dynamo DefaultWorkerSelector: per-tier
	// overlap credit against the prompt's prefill blocks (see cost.go).
	CostDefault CostModel = "default"
	// CostClassic is the formula Dynamo's router used before tiers and
	// credits (overlap_score_weight * prefill_blocks + decode_blocks), for
	// older Dynamo deployments. See the package documentation.
	CostClassic CostModel = "classic"
)

// Defaults. The cost defaults are Dynamo's KvRouterConfig::default() in
// lib/kv-router/src/scheduling/config.rs (ai-dynamo/dynamo commit
// 07a6c9ce3bb096cfaf353fe69ee578e105c6a512): overlap_score_credit 1.0,
// overlap_score_credit_decay 0.0, prefill_load_scale 1.0,
// decode_active_request_weight 0.0, host_cache_hit_weight 0.75,
// disk_cache_hit_weight 0.25, router_temperature 0.0. The classic
// overlap_score_weight 1.0 is the older KvRouterConfig's. Spreading's
// half-life is about one prefetch lifetime.
const (
	DefaultCost                      = CostDefault
	DefaultOverlapScoreCredit        = 1.0
	DefaultOverlapScoreCreditDecay   = 0.0
	DefaultPrefillLoadScale          = 1.0
	DefaultDecodeActiveRequestWeight = 0.0
	DefaultHostCacheHitWeight        = 0.75
	DefaultDiskCacheHitWeight        = 0.25
	DefaultOverlapScoreWeight        = 1.0
	DefaultTemperature               = 0.0
	DefaultSpreadHalfLife            = 2 * time.Second
)

// Config tunes the choice. Use DefaultConfig, not the zero value: a zero
// OverlapScoreWeight is a legal setting (load only), not "unset".
type Config struct {
	// Cost picks the cost function: CostDefault (today's Dynamo, the
	// default; "" means it too) or CostClassic.
	Cost CostModel
	// OverlapScoreCredit multiplies the device overlap credited against
	// the prefill blocks (CostDefault), as --router-kv-overlap-score-credit.
	// Default 1; 0 ignores device overlap.
	OverlapScoreCredit float64
	// OverlapScoreCreditDecay shrinks the device credit of a worker with
	// more active prefill tokens than the least loaded candidate
	// (CostDefault), as --router-kv-overlap-score-credit-decay. Default 0:
	// no decay.
	OverlapScoreCreditDecay float64
	// PrefillLoadScale multiplies the prefill blocks left after the
	// credits (CostDefault), as --router-prefill-load-scale. Default 1.
	PrefillLoadScale float64
	// DecodeActiveRequestWeight is the cost per active request
	// (CostDefault), as --router-decode-active-request-weight. Default 0.
	// kv.load reports carry no active request count (Dynamo's ActiveLoad
	// has none; its router counts its own requests), so the term is 0
	// whatever the weight.
	DecodeActiveRequestWeight float64
	// HostCacheHitWeight credits each host_pinned block past the device
	// prefix (CostDefault), as --router-host-cache-hit-weight. Default 0.75.
	HostCacheHitWeight float64
	// DiskCacheHitWeight credits each disk or external block past the host
	// prefix (CostDefault), as --router-disk-cache-hit-weight. Default 0.25.
	DiskCacheHitWeight float64
	// OverlapScoreWeight multiplies the prefill cost in the logit
	// (CostClassic only), as Dynamo's older --kv-overlap-score-weight.
	// Default 1. 0 ignores both cache and prefill load; must be finite and
	// >= 0.
	OverlapScoreWeight float64
	// Temperature of the softmax draw, as Dynamo's --router-temperature.
	// Default 0: always the lowest logit. Must be finite and >= 0.
	Temperature float64
	// Spread is burst spreading, off by default (see SpreadConfig).
	Spread SpreadConfig
}

// SpreadConfig turns on burst spreading: every choice adds the prompt's
// full blocks as virtual decode blocks to the chosen (worker, dp rank),
// decaying by half every HalfLife. It exists because wake-ups arriving
// together all see the same loads (nobody books load for a hint) and, at
// temperature 0, all pick the same worker.
//
// It is off by default because it changes the answer away from the one
// Dynamo's router gives for the same state: the router books the real
// request's load only when the real request arrives, so a spread prefetch
// can land on a worker the router will not pick. Turn it on when bursts of
// wake-ups for distinct, uncached prompts are common and landing exactly
// where the router goes matters less than not overloading one worker.
type SpreadConfig struct {
	Enabled bool
	// HalfLife of the virtual load; default 2s. Must be >= 0 (0 = default).
	HalfLife time.Duration
}

// DefaultConfig returns Dynamo's defaults (see the Default constants),
// temperature 0, spreading off.
func DefaultConfig() Config {
	return Config{
		Cost:                      DefaultCost,
		OverlapScoreCredit:        DefaultOverlapScoreCredit,
		OverlapScoreCreditDecay:   DefaultOverlapScoreCreditDecay,
		PrefillLoadScale:          DefaultPrefillLoadScale,
		DecodeActiveRequestWeight: DefaultDecodeActiveRequestWeight,
		HostCacheHitWeight:        DefaultHostCacheHitWeight,
		DiskCacheHitWeight:        DefaultDiskCacheHitWeight,
		OverlapScoreWeight:        DefaultOverlapScoreWeight,
		Temperature:               DefaultTemperature,
		Spread:                    SpreadConfig{HalfLife: DefaultSpreadHalfLife},
	}
}

// Validate reports the first unusable field, wrapping ErrInvalidConfig.
// Every weight must be finite and >= 0 (Dynamo's own checks); the cost
// model "", "default" or "classic".
func (c Config) Validate() error {
	switch c.Cost {
	case "", CostDefault, CostClassic:
	default:
		return fmt.Errorf("%w: cost %q (want %q or %q)", ErrInvalidConfig, c.Cost, CostDefault, CostClassic)
	}
	for _, w := range c.weights() {
		if math.IsNaN(*w.v) || math.IsInf(*w.v, 0) || *w.v < 0 {
			return fmt.Errorf("%w: %s %v (want a finite number >= 0)", ErrInvalidConfig, w.name, *w.v)
		}
	}
	if math.IsNaN(c.Temperature) || math.IsInf(c.Temperature, 0) || c.Temperature < 0 {
		return fmt.Errorf("%w: temperature %v (want a finite number >= 0)", ErrInvalidConfig, c.Temperature)
	}
	if c.Spread.HalfLife < 0 {
		return fmt.Errorf("%w: spread half-life %v (want >= 0)", ErrInvalidConfig, c.Spread.HalfLife)
	}
	return nil
}

type namedWeight struct {
	name string
	v    *float64
}

// weights lists the weights Validate checks, in a fixed order.
func (c *Config) weights() []namedWeight {
	return []namedWeight{
		{"overlap score credit", &c.OverlapScoreCredit},
		{"overlap score credit decay", &c.OverlapScoreCreditDecay},
		{"prefill load scale", &c.PrefillLoadScale},
		{"decode active request weight", &c.DecodeActiveRequestWeight},
		{"host cache hit weight", &c.HostCacheHitWeight},
		{"disk cache hit weight", &c.DiskCacheHitWeight},
		{"overlap score weight", &c.OverlapScoreWeight},
	}
}

// Option configures a Selector.
type Option func(*options)

type options struct {
	cfg     Config
	now     func() time.Time
	sampler Sampler
}

// WithConfig replaces the whole Config (later options still apply).
func WithConfig(c Config) Option { return func(o *options) { o.cfg = c } }

// WithClock sets the clock spreading decays by; default time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithSampler sets the source of softmax draws; default
// RequestIDSampler(0).
func WithSampler(s Sampler) Option {
	return func(o *options) {
		if s != nil {
			o.sampler = s
		}
	}
}
