package service

import (
	"errors"
	"fmt"
	"strings"
)

// Values of --pins: tool-call pins on whenever a target is set (auto,
// the default), on (refused without a target), or off.
const (
	PinsAuto = "auto"
	PinsOn   = "on"
	PinsOff  = "off"
)

// pinTargets names what tool-call pins reach under c, one entry per
// target; none: pins are off. Each says what the deployment must run for
// the target to act on them (docs/integrate.md, "Which target takes
// which hint").
func (c Config) pinTargets() []string {
	if c.Pins == PinsOff {
		return nil
	}
	var t []string
	if c.PinEndpoint != "" {
		t = append(t, "Mooncake master "+c.PinEndpoint+" (kv.pin@1.0 over ZeroMQ; needs a master that implements it, stock Mooncake has no pin RPC)")
	}
	if c.LMCache.URL != "" {
		t = append(t, fmt.Sprintf("LMCache controller %s (POST /pin, instance %q, location %q, pinned again every %v; hintstream keeps the TTL)",
			c.LMCache.URL, c.LMCache.Instance, c.LMCache.Location, c.LMCache.Repin))
	}
	if c.Decisions.RetainOnWorker {
		t = append(t, "the serving worker's hint socket (hintstream.retain@1.0 over ZeroMQ; hintstream adapter makes it vLLM's vllm.set_priority)")
	}
	return t
}

// prefetchTargets names what wake-up prefetches reach under c: always
// the chosen worker's registered hint socket. What binds it decides the
// call a prefetch becomes: hintstream adapter's --prefetch-target (a
// one-token warm-up on the engine or through the Dynamo frontend, or an
// LMCache /l2/prefetch), or a scheduler that decodes kv.prefetch itself.
func (c Config) prefetchTargets() []string {
	return []string{"the chosen worker's registered hint socket (kv.prefetch@1.0 over ZeroMQ; hintstream adapter there makes it " +
		"an engine or Dynamo-frontend warm-up or an LMCache /l2/prefetch, by its --prefetch-target)"}
}

// validateTargets refuses a hint kind turned on with no target to reach,
// and a target configured wrong.
func (c Config) validateTargets() error {
	switch c.Pins {
	case "", PinsAuto, PinsOff:
	case PinsOn:
		if len(c.pinTargets()) == 0 {
			return errors.New("--pins on, but no pin target is set: set --pin-endpoint (a Mooncake master that implements kv.pin), " +
				"--lmcache-controller (LMCache) or --retain-on-worker (vLLM through hintstream adapter)")
		}
	default:
		return fmt.Errorf("--pins %q: want %s, %s or %s", c.Pins, PinsAuto, PinsOn, PinsOff)
	}
	if c.LMCache.URL != "" {
		if err := c.LMCache.Validate(); err != nil {
			return fmt.Errorf("--lmcache-controller: %w", err)
		}
	}
	return nil
}

// reportTargets says, once at start, which targets each hint kind
// reaches: one line per kind.
func (s *Service) reportTargets() {
	for _, k := range []struct {
		kind    string
		targets []string
	}{{"prefetch", s.cfg.prefetchTargets()}, {"pin", s.cfg.pinTargets()}} {
		if len(k.targets) == 0 {
			s.log.Info("hint targets", "kind", k.kind, "targets", "none (off)")
			continue
		}
		s.log.Info("hint targets", "kind", k.kind, "targets", strings.Join(k.targets, "; "))
	}
}
