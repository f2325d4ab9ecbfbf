package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/pins"
	"github.com/hintstream/hintstream/service"
)

// pinFlags registers the pin path's bounds and returns what validates
// and applies them.
//
// Operator-facing because they trade memory for coverage: the caps bound
// what one tool-call response can make a member allocate (docs/limits.md,
// "The pin path"), and the slot timings set how large hintstream_pins
// stays under churn (records live a pin's TTL plus the linger).
func pinFlags(fs *flag.FlagSet) func(*service.Config) error {
	maxKeys := fs.Int("pin-max-keys", actions.DefaultMaxPinKeys,
		"cap on one pin's object keys; a longer pin is cut to its leading pages, one page over it is not pinned")
	maxBytes := fs.Int("pin-max-bytes", actions.DefaultMaxPinBytes,
		"cap on one pin's object keys in bytes, as --pin-max-keys")
	linger := fs.Duration("pin-slot-linger", pins.DefaultSlotLinger,
		"how long a session's pin slot record outlives its pin (a session returning later still teaches the tool-time learner); applies to a new hintstream_pins bucket or with --update-streams")
	marker := fs.Duration("pin-slot-marker-ttl", pins.DefaultSlotMarkerTTL,
		"how long a released slot's delete marker stays (at least 1s); applies as --pin-slot-linger")
	return func(c *service.Config) error {
		switch {
		case *maxKeys < 1:
			return fmt.Errorf("--pin-max-keys must be at least 1, got %d", *maxKeys)
		case *maxBytes < 1:
			return fmt.Errorf("--pin-max-bytes must be at least 1, got %d", *maxBytes)
		case *linger < 0:
			return fmt.Errorf("--pin-slot-linger must not be negative, got %v", *linger)
		case *marker < time.Second:
			return fmt.Errorf("--pin-slot-marker-ttl must be at least 1s (JetStream's minimum), got %v", *marker)
		}
		c.Decisions.MaxPinKeys, c.Decisions.MaxPinBytes = *maxKeys, *maxBytes
		c.PinSlotLinger, c.PinSlotMarkerTTL = *linger, *marker
		return nil
	}
}
