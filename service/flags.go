package service

import (
	"errors"
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/ingest/eventplane"
)

// configFlags holds what the flags parse into where a Config field is not
// the flag's value as it is: comma lists, the consumer group the durable
// names derive from, and the parts that a flag of their own turns on.
// ApplyFlags turns it into the Config's fields.
type configFlags struct {
	streams *streamFlags // RegisterStreamFlags
	run     *runFlags    // RegisterFlags
}

// streamFlags are the stream flags' values that are not fields of
// streams.Set as they are.
type streamFlags struct {
	reqSubj, respSubj, kvSubj, loadSubj string
	replicas                            int
	tags                                string
	scope                               eventplane.Scope
}

// runFlags are run's flag values that are not Config fields as they are.
type runFlags struct {
	group     string
	kvStreams string
	models    func() ([]string, error)

	agentsOn     bool
	agentsStream string
	agents       agents.Config

	retention      retention.Config
	retentionGroup retention.GroupConfig
	groupOn        bool

	source sourceFlags // flags_source.go
}

// RegisterFlags registers every flag of `hintstream run` that sets a
// field of c, bound to c and set to the command line's defaults; the
// stream flags (RegisterStreamFlags) and the decision flags
// (engine.Decisions.RegisterFlags) are among them. Where the command line
// says 0 for "off" or "no bound", c holds it as parsed until ApplyFlags,
// called once after parsing (and after a config file is applied), turns
// it into Off, NoBound or Immediately and checks each flag's value.
// Flags about the command itself (--config, --check-config, logging,
// the demo) are the command's.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.RegisterStreamFlags(fs)
	c.flags.run = &runFlags{}
	c.registerBusFlags(fs)        // flags_bus.go
	c.registerConsumerFlags(fs)   // flags_consumers.go
	c.registerSenderFlags(fs)     // flags_senders.go
	c.registerPinFlags(fs)        // flags_pins.go
	c.registerSnapshotFlags(fs)   // flags_snapshots.go
	c.registerHTTPFlags(fs)       // flags_http.go
	c.registerClusterFlags(fs)    // flags_cluster.go
	c.registerPlannerFlags(fs)    // flags_planners.go
	c.registerSourceFlags(fs)     // flags_source.go
	c.registerEventPlaneFlags(fs) // eventplane_zmq.go
	c.Decisions.RegisterFlags(fs) // decide/engine/flags.go
}

// ApplyFlags checks the values RegisterFlags or RegisterStreamFlags
// bound, and completes c from them: the stream set, the command line's
// 0 for off or no bound as Off, NoBound or Immediately, the durable names
// from --group, and the planners their flags turn on. Its errors wrap
// ErrInvalidConfig and name the flag. It acts once: a second call, or a
// call without registered flags, does nothing. Validate still checks the
// whole configuration.
func (c *Config) ApplyFlags() error {
	f := c.flags
	if f == nil {
		return nil
	}
	c.flags = nil
	if f.streams != nil {
		if err := c.applyStreamFlags(f.streams); err != nil {
			return invalidFlag(err)
		}
	}
	if f.run == nil {
		return nil
	}
	if err := c.Decisions.ApplyFlags(); err != nil {
		return invalidFlag(err)
	}
	for _, apply := range []func(*runFlags) error{
		c.applyConsumerFlags, c.applySenderFlags, c.applyPinFlags, c.applySnapshotFlags,
		c.applyBusFlags, c.applyPlannerFlags, c.applyHTTPFlags, c.applyClusterFlags, c.applySourceFlags,
	} {
		if err := apply(f.run); err != nil {
			return invalidFlag(err)
		}
	}
	return nil
}

// invalidFlag wraps err with ErrInvalidConfig unless it already is.
func invalidFlag(err error) error {
	if errors.Is(err, ErrInvalidConfig) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}

// flagError is a flag's value refused, wrapping ErrInvalidConfig.
func flagError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
}
