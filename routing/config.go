package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// ErrInvalidConfig marks a Config value the selector cannot use.
var ErrInvalidConfig = errors.New("invalid routing config")

// Defaults, as Dynamo's KvRouterConfig::default() (overlap_score_weight 1.0,
// router_temperature 0.0) and, for spreading, about one prefetch lifetime.
const (
	DefaultOverlapScoreWeight = 1.0
	DefaultTemperature        = 0.0
	DefaultSpreadHalfLife     = 2 * time.Second
)

// Config tunes the choice. Use DefaultConfig, not the zero value: a zero
// OverlapScoreWeight is a legal setting (load only), not "unset".
type Config struct {
	// OverlapScoreWeight multiplies the prefill cost in the logit, as
	// Dynamo's --kv-overlap-score-weight. Default 1. 0 ignores both cache
	// and prefill load; must be finite and >= 0.
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

// DefaultConfig returns weight 1, temperature 0, spreading off.
func DefaultConfig() Config {
	return Config{
		OverlapScoreWeight: DefaultOverlapScoreWeight,
		Temperature:        DefaultTemperature,
		Spread:             SpreadConfig{HalfLife: DefaultSpreadHalfLife},
	}
}

// Validate reports the first unusable field, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	if math.IsNaN(c.OverlapScoreWeight) || math.IsInf(c.OverlapScoreWeight, 0) || c.OverlapScoreWeight < 0 {
		return fmt.Errorf("%w: overlap score weight %v (want a finite number >= 0)", ErrInvalidConfig, c.OverlapScoreWeight)
	}
	if math.IsNaN(c.Temperature) || math.IsInf(c.Temperature, 0) || c.Temperature < 0 {
		return fmt.Errorf("%w: temperature %v (want a finite number >= 0)", ErrInvalidConfig, c.Temperature)
	}
	if c.Spread.HalfLife < 0 {
		return fmt.Errorf("%w: spread half-life %v (want >= 0)", ErrInvalidConfig, c.Spread.HalfLife)
	}
	return nil
}

// sanitized replaces each unusable field by its default, so a bad option
// never turns into NaN logits; NewSelector logs what it replaced.
func (c Config) sanitized() (Config, []error) {
	var errs []error
	d := DefaultConfig()
	if err := (Config{OverlapScoreWeight: c.OverlapScoreWeight}).Validate(); err != nil {
		errs, c.OverlapScoreWeight = append(errs, err), d.OverlapScoreWeight
	}
	if err := (Config{Temperature: c.Temperature}).Validate(); err != nil {
		errs, c.Temperature = append(errs, err), d.Temperature
	}
	if c.Spread.HalfLife < 0 {
		errs = append(errs, (Config{Spread: c.Spread}).Validate())
		c.Spread.HalfLife = d.Spread.HalfLife
	}
	if c.Spread.HalfLife == 0 {
		c.Spread.HalfLife = d.Spread.HalfLife
	}
	return c, errs
}

// Option configures a Selector.
type Option func(*options)

type options struct {
	cfg     Config
	now     func() time.Time
	sampler Sampler
	log     *slog.Logger
}

// WithConfig replaces the whole Config (later options still apply).
func WithConfig(c Config) Option { return func(o *options) { o.cfg = c } }

// WithOverlapScoreWeight sets Config.OverlapScoreWeight.
func WithOverlapScoreWeight(w float64) Option {
	return func(o *options) { o.cfg.OverlapScoreWeight = w }
}

// WithTemperature sets Config.Temperature.
func WithTemperature(t float64) Option { return func(o *options) { o.cfg.Temperature = t } }

// WithSpreading turns burst spreading on with the given half-life
// (<= 0: the default 2s).
func WithSpreading(halfLife time.Duration) Option {
	return func(o *options) {
		if halfLife <= 0 {
			halfLife = DefaultSpreadHalfLife
		}
		o.cfg.Spread = SpreadConfig{Enabled: true, HalfLife: halfLife}
	}
}

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

// WithLogger sets the logger for configuration warnings; default
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}
