package service

import (
	"fmt"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// validateNamesAndEndpoints is the part of Validate that start-up would
// otherwise find only when the server or a socket refuses: durable
// names (the group's, by default), the streams' own checks and the pin
// endpoint, which follows the rules of a worker's hint endpoints
// (ipc:// allowed: the master may share the host).
func (c Config) validateNamesAndEndpoints() error {
	for _, d := range []struct{ flag, name string }{
		{"--requests-durable (default <group>-requests)", c.RequestsDurable},
		{"--responses-durable (default <group>-responses)", c.ResponsesDurable},
	} {
		if d.name == "" {
			continue
		}
		if err := streams.ValidName("durable name", d.name); err != nil {
			return fmt.Errorf("%s: %w", d.flag, err)
		}
	}
	if err := c.Streams.Validate(); err != nil {
		return err
	}
	if rt := c.RequestTrace; rt != nil {
		if err := streams.ValidName("stream name", rt.Stream); err != nil {
			return fmt.Errorf("--request-trace-stream: %w", err)
		}
		if rt.Durable != "" {
			if err := streams.ValidName("durable name", rt.Durable); err != nil {
				return fmt.Errorf("--request-trace-durable (default <group>-request-trace): %w", err)
			}
		}
	}
	if c.PinEndpoint != "" {
		if reason, why := (schemas.EndpointRules{AllowIPC: true}).CheckEndpoint(c.PinEndpoint); reason != "" {
			return fmt.Errorf("--pin-endpoint %.80q: %s (%s)", c.PinEndpoint, why, reason)
		}
	}
	return nil
}
