package service

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// Defaults of a Config that no other package owns (Config.Defaults fills
// zero fields with them; the `run` flags take theirs from here). The
// others are the owning package's: zmqsend.DefaultQueueSize,
// zmqsend.DefaultMaxHeld, consumers.DefaultRequestsDurable,
// consumers.DefaultAckWait, consumers.DefaultMaxAckPending, ...
const (
	DefaultEmbeddedDir      = ".hintstream/nats"
	DefaultKVApplyShards    = 4
	DefaultSnapshotInterval = 5 * time.Minute
	DefaultRequestIndexTTL  = time.Hour
)

// Explicit "off" values. A Config field's zero value means its default,
// so turning a part off takes a value of its own; these name it (any
// negative value still means the same).
const (
	// NoBound lifts a bound: SenderMaxHeld, PinSlotsMaxBytes,
	// RequestIndexMaxBytes.
	NoBound = -1
	// Off turns a timed part off: SnapshotInterval (no snapshots),
	// SenderIdleClose (never close an idle sender), KVEventsKeep (never
	// purge).
	Off time.Duration = -1
	// Immediately is the SenderSettleDelay that acks a trigger as soon as
	// ZMQ took its hint.
	Immediately time.Duration = -1
)

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid configuration")

// Validate checks the configuration as a whole, once: Start calls it
// before anything is connected, and `hintstream run --check-config` calls
// it without connecting. Its errors wrap ErrInvalidConfig and name the
// flag of `run` that sets the field.
func (c Config) Validate() error {
	invalid := func(err error) error { return fmt.Errorf("%w: %w", ErrInvalidConfig, err) }
	if err := c.Decisions.Validate(); err != nil {
		return invalid(err)
	}
	if err := c.NATS.Validate(); err != nil {
		return invalid(err)
	}
	if err := c.validateNamesAndEndpoints(); err != nil { // validate_names.go
		return invalid(err)
	}
	if err := c.validateTargets(); err != nil { // targets.go
		return invalid(err)
	}
	if err := zmqsend.ValidateMaxEndpoints(c.maxEndpoints()); err != nil {
		return invalid(fmt.Errorf("--max-endpoints: %w", err))
	}
	switch {
	case c.Pprof && c.HTTPAddr == "":
		return invalid(errors.New("--pprof needs --http-addr"))
	case (c.CurveClientPublicKey == "") != (c.CurveClientSecretKey == ""):
		return invalid(errors.New("--curve-public-key and --curve-secret-key go together"))
	case slices.Contains(c.Models, ""):
		return invalid(errors.New("--models: empty model name"))
	}
	return c.validateKVStreams()
}
