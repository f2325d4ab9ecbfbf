// Package hints makes hintstream's hint decisions, apart from how events
// arrive. Engine (built by NewEngine, the one constructor of
// `hintstream run` and `hintstream replay`) applies KV events and load
// to the index and load table, and decides on requests and responses:
// each returns an Outcome (ack, retry after d, held until the hint
// leaves, reject with reason) that the transport acts on (package
// consumers settles JetStream messages by it; a replay only counts it).
// The decoders (kvevents.Decoder.Decode, DecodeLoad, DecodeRequest, DecodeResponse) sit
// beside the engine so that run and replay read events the same way.
// Tool-call pins are package pins, which the engine drives.
//
// Decisions is the one configuration of the worker choice, the index,
// prefetch and pin TTLs, tool times, renewals, input limits and the
// holding area, embedded in both service.Config and replay.Options, so
// that a replay makes the choices of the live run it replays.
package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// DefaultPinRenewMax is the default Decisions.PinRenewMax: tool calls of
// up to 10 minutes keep their pages pinned however short the expected
// time was; a session that never comes back holds its pin that long.
const DefaultPinRenewMax = 10 * time.Minute

// DefaultPrefetchTTL is how long after its wake-up a prefetch expires
// (the hint's expires_at_ms) unless Decisions.PrefetchTTL says otherwise.
const DefaultPrefetchTTL = 2 * time.Second

// Decisions configures every hint decision. The zero value of a field
// means its default (see WithDefaults); Validate says what is refused.
type Decisions struct {
	// Routing is the worker choice; nil means routing.DefaultConfig()
	// (Dynamo's defaults).
	Routing *routing.Config
	// IndexOptions configure the block index (bound, stale policy, jump).
	IndexOptions []index.Option
	// PrefetchTTL is how long after its wake-up a prefetch expires;
	// default DefaultPrefetchTTL.
	PrefetchTTL time.Duration
	// PinTTL turns an expected tool time into a pin TTL; zero value means
	// actions.DefaultTTLConfig().
	PinTTL actions.TTLConfig
	// ToolTime learns expected tool times; zero value means
	// tooltime.DefaultConfig().
	ToolTime tooltime.Config
	// KeepPinOnNextTurn leaves a session's pin in place when its next
	// request arrives (by default the slot is released: the new turn loads
	// the pages itself).
	KeepPinOnNextTurn bool
	// RetainOnWorker also sends the worker that served a tool call a
	// kv.retain@1.0 of the turn's tokens (hintstream run
	// --retain-on-worker), for `hintstream adapter` to act on; it turns
	// tool-call pins on even without a pin endpoint.
	RetainOnWorker bool
	// PinRenewMax is how long a tool call's pin is renewed while its
	// session has not come back, counted from the response (see
	// decide/pins/renew.go). Default DefaultPinRenewMax; negative is refused.
	PinRenewMax time.Duration
	// NoPinRenewal turns renewals off: pins lapse at their TTL
	// (--pin-renew-max 0). PinRenewMax is then ignored.
	NoPinRenewal bool
	// PinBudgetTokens bounds the tokens' pages a member keeps pinned at
	// once (--pin-budget-tokens; decide/pins/budget.go): the pins whose
	// sessions are expected back last are released first. 0: no bound;
	// negative is refused.
	PinBudgetTokens int64
	// Limits bound what an event may hold; zero fields: schemas' defaults.
	Limits schemas.Limits
	// Holding bounds the KV events kept for workers not registered (yet);
	// zero fields: the index.DefaultHolding* constants.
	Holding index.HoldingConfig
	// MaxPinKeys and MaxPinBytes cap one pin (pins.Config); 0: the
	// actions.DefaultMaxPin* defaults.
	MaxPinKeys, MaxPinBytes int

	// flags is what RegisterFlags bound and ApplyFlags completes d from.
	flags *decisionFlags
}

// WithDefaults fills zero fields with their defaults.
func (d Decisions) WithDefaults() Decisions {
	if d.Routing == nil {
		r := routing.DefaultConfig()
		d.Routing = &r
	}
	if d.PrefetchTTL <= 0 {
		d.PrefetchTTL = DefaultPrefetchTTL
	}
	if d.PinTTL == (actions.TTLConfig{}) {
		d.PinTTL = actions.DefaultTTLConfig()
	}
	if d.ToolTime == (tooltime.Config{}) {
		d.ToolTime = tooltime.DefaultConfig()
	}
	if d.PinRenewMax == 0 {
		d.PinRenewMax = DefaultPinRenewMax
	}
	return d
}

// Validate checks d after WithDefaults; its errors wrap the packages'
// own sentinels (routing.ErrInvalidConfig and the like).
func (d Decisions) Validate() error {
	if d.Routing != nil {
		if err := d.Routing.Validate(); err != nil {
			return err
		}
	}
	if d.PinBudgetTokens < 0 {
		return fmt.Errorf("pin budget %d tokens is negative (0: no bound)", d.PinBudgetTokens)
	}
	if d.PinRenewMax < 0 {
		return fmt.Errorf("pin renewal cap %v is negative (NoPinRenewal turns renewals off)", d.PinRenewMax)
	}
	if err := d.PinTTL.Validate(); err != nil {
		return err
	}
	if err := d.ToolTime.Validate(); err != nil {
		return err
	}
	return d.Holding.Validate()
}

// RenewMax is PinRenewMax as pins.Pinning takes it: 0 for never
// (NoPinRenewal).
func (d Decisions) RenewMax() time.Duration {
	if d.NoPinRenewal {
		return 0
	}
	return max(d.PinRenewMax, 0)
}

// PinConfig is the pins' policy under d: TTL, tool times, keep-pin and
// the renewal cap.
func (d Decisions) PinConfig() pins.Config {
	return pins.Config{TTL: d.PinTTL, ToolTime: d.ToolTime, ReleaseOnNextTurn: !d.KeepPinOnNextTurn,
		RenewMax: d.RenewMax(), RetainOnWorker: d.RetainOnWorker, MaxPinKeys: d.MaxPinKeys, MaxPinBytes: d.MaxPinBytes,
		BudgetTokens: d.PinBudgetTokens}
}

// NewIndex is the block index under d's IndexOptions, logging to log: the
// one constructor of run's index (at start-up and after a failed snapshot
// load) and replay's.
func (d Decisions) NewIndex(log *slog.Logger) *index.Memory {
	return index.New(append([]index.Option{index.WithLogger(log)}, d.IndexOptions...)...)
}
