package service

import (
	"cmp"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/state/registry"
)

// Cardinality bounds: the socket budget, what the registry
// accepts, and which endpoints keep metric series. The Config fields are
// in the block "Cardinality bounds" of Config.

// maxEndpoints is the socket budget in effect.
func (c Config) maxEndpoints() int {
	return cmp.Or(max(c.MaxEndpoints, 0), zmqsend.DefaultMaxEndpoints)
}

// senderIdleClose is the idle time after which a sender closes; 0: never.
func (c Config) senderIdleClose() time.Duration {
	switch {
	case c.SenderIdleClose < 0:
		return 0
	case c.SenderIdleClose == 0:
		return zmqsend.DefaultIdleClose
	}
	return c.SenderIdleClose
}

// keptEndpoints never close for the budget: the pin endpoint.
func (c Config) keptEndpoints() []string {
	if c.PinEndpoint == "" {
		return nil
	}
	return []string{c.PinEndpoint}
}

// budgetOptions are the pool's socket budget options, after
// ensureFileLimit made room for them.
func (s *Service) budgetOptions() []zmqsend.PoolOption {
	s.log.Info("socket budget", "max_endpoints", s.cfg.maxEndpoints(),
		"open_files_needed", zmqsend.FilesFor(s.cfg.maxEndpoints(), len(s.cfg.keptEndpoints())),
		"open_files_limit", s.fileLimit, "sender_idle_close", s.cfg.senderIdleClose())
	return []zmqsend.PoolOption{zmqsend.WithMaxEndpoints(s.cfg.maxEndpoints()),
		zmqsend.WithIdleClose(s.cfg.senderIdleClose()), zmqsend.WithKeep(s.cfg.keptEndpoints()...)}
}

// ensureFileLimit raises RLIMIT_NOFILE to what the socket budget needs,
// or fails start-up saying so; Start calls it after Validate, before
// connecting.
func (s *Service) ensureFileLimit() error {
	need := zmqsend.FilesFor(s.cfg.maxEndpoints(), len(s.cfg.keptEndpoints()))
	var err error
	if s.fileLimit, err = zmqsend.EnsureFileLimit(need); err != nil {
		return fmt.Errorf("--max-endpoints %d: %w", s.cfg.maxEndpoints(), err)
	}
	return nil
}

// registryOptions make the registry validate endpoints under the
// configured rules and count refusals by reason.
func (s *Service) registryOptions() []registry.Option {
	return []registry.Option{registry.WithEndpointRules(s.cfg.EndpointRules),
		registry.WithOnInvalid(func(reason string) { s.Counters.RegistryInvalidRecords.Inc(reason) })}
}

// releaseEndpoint closes the sender of an endpoint its worker no longer
// lists. When no registered worker lists it any more, its stats and
// latency series go too: endpoint labels exist only for registered
// endpoints. Called from the registry's change callback, once the
// registry's claims reflect the change.
func (s *Service) releaseEndpoint(ep string) {
	if s.endpointRegistered(ep) {
		s.pool.Remove(ep)
		return
	}
	s.pool.Forget(ep)
	if s.latency != nil {
		s.latency.Forget(ep)
	}
}

func (s *Service) endpointRegistered(ep string) bool {
	return ep == s.cfg.PinEndpoint || (s.registry != nil && s.registry.Claimed(ep))
}
