package service

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/registry"
)

// Cardinality bounds (issue 19): the socket budget, what the registry
// accepts, and which endpoints keep metric series. The Config fields are
// in the block "Cardinality bounds" of Config.

// maxEndpoints is the socket budget in effect.
func (c Config) maxEndpoints() int {
	return cmp.Or(max(c.MaxEndpoints, 0), actions.DefaultMaxEndpoints)
}

// senderIdleClose is the idle time after which a sender closes; 0: never.
func (c Config) senderIdleClose() time.Duration {
	switch {
	case c.SenderIdleClose < 0:
		return 0
	case c.SenderIdleClose == 0:
		return actions.DefaultIdleClose
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
func (s *Service) budgetOptions() []actions.PoolOption {
	return []actions.PoolOption{actions.WithMaxEndpoints(s.cfg.maxEndpoints()),
		actions.WithIdleClose(s.cfg.senderIdleClose()), actions.WithKeep(s.cfg.keptEndpoints()...)}
}

// ensureFileLimit raises RLIMIT_NOFILE to what the socket budget needs,
// or fails start-up saying so.
func (s *Service) ensureFileLimit() error {
	if err := actions.ValidateMaxEndpoints(s.cfg.maxEndpoints()); err != nil {
		return err
	}
	need := actions.FilesFor(s.cfg.maxEndpoints(), len(s.cfg.keptEndpoints()))
	have, err := actions.EnsureFileLimit(need)
	if err != nil {
		return fmt.Errorf("--max-endpoints %d: %w", s.cfg.maxEndpoints(), err)
	}
	s.log.Info("socket budget", "max_endpoints", s.cfg.maxEndpoints(), "open_files_needed", need,
		"open_files_limit", have, "sender_idle_close", s.cfg.senderIdleClose())
	return nil
}

// registryOptions make the registry validate endpoints under the
// configured rules and count refusals by reason.
func (s *Service) registryOptions() []registry.Option {
	const name = "registry.invalid_records"
	s.Counters.Add(name, 0) // exported at 0 before the first refusal
	return []registry.Option{registry.WithEndpointRules(s.cfg.EndpointRules),
		registry.WithOnInvalid(func(reason string) { s.Counters.IncLabel(name, reason) })}
}

// releaseEndpoint closes the sender of an endpoint its worker no longer
// lists. When no registered worker lists it any more, its stats and
// latency series go too: endpoint labels exist only for registered
// endpoints. Called from the registry's change callback, after the
// registry applied the change.
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
	if ep == s.cfg.PinEndpoint {
		return true
	}
	if s.registry == nil { // a change during Open's first replay
		return false
	}
	for _, w := range s.registry.Workers() {
		if slices.Contains(w.HintEndpoints, ep) {
			return true
		}
	}
	return false
}
