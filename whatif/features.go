package whatif

import (
	"strings"

	"github.com/hintstream/hintstream/whatif/simulate"
)

// Features is what a row turns on, in --json's "policy": the notes name
// what differs between two rows that cost the same from it, and the
// summary the `hintstream run` flags that turn a policy on.
type Features struct {
	// Hintstream: hintstream's decision engine (every policy row; not
	// off, not a peer).
	Hintstream        bool `json:"hintstream,omitempty"`
	Affinity          bool `json:"affinity,omitempty"`
	NoPrefetch        bool `json:"no_prefetch,omitempty"`
	NoPins            bool `json:"no_pins,omitempty"`
	KeepPinOnNextTurn bool `json:"keep_pin_on_next_turn,omitempty"`
	NoPinRenewal      bool `json:"no_pin_renewal,omitempty"`
	// PinBudget: the pins within the simulated L3's capacity (run
	// --pin-budget-tokens).
	PinBudget  bool   `json:"pin_budget,omitempty"`
	L3Eviction string `json:"l3_eviction,omitempty"` // "" is LRU
	// Peer names a peer's own mechanism.
	Peer string `json:"peer,omitempty"`
}

// features reads a policy's switches.
func features(p simulate.Policy) *Features {
	f := &Features{Hintstream: p.Peer == nil, Affinity: p.Affinity,
		NoPrefetch: p.NoPrefetch, NoPins: p.NoPins, KeepPinOnNextTurn: p.Decisions.KeepPinOnNextTurn,
		NoPinRenewal: p.Decisions.NoPinRenewal, PinBudget: p.PinBudget || p.Decisions.PinBudgetTokens > 0}
	if p.L3Eviction != simulate.L3LRU {
		f.L3Eviction = p.L3Eviction
	}
	if pe := p.Peer; pe != nil {
		switch {
		case pe.SpeculativePrefill:
			f.Peer = "speculative prefill"
		case pe.LearnedTTL:
			f.Peer = "tool-call TTL learned per tool"
		case pe.ToolTTL > 0:
			f.Peer = "tool-call TTL of " + pe.ToolTTL.String()
		}
	}
	return f
}

// toggles names what f turns on, one switch each, in a fixed order.
func (f *Features) toggles() []string {
	if f == nil {
		return nil
	}
	var t []string
	add := func(on bool, name string) {
		if on {
			t = append(t, name)
		}
	}
	add(f.Hintstream, "hintstream's hints")
	add(f.Affinity, "affinity")
	add(f.NoPrefetch, "no prefetch")
	add(f.NoPins, "no pins")
	add(f.KeepPinOnNextTurn, "keep pin on next turn")
	add(f.NoPinRenewal, "no pin renewal")
	add(f.PinBudget, "pin budget")
	add(f.L3Eviction != "", strings.ToUpper(f.L3Eviction)+" L3 eviction")
	add(f.Peer != "", f.Peer)
	return t
}

// minus is what a has that b has not.
func minus(a, b []string) []string {
	var d []string
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			d = append(d, x)
		}
	}
	return d
}

// runFlags is how `hintstream run` turns f on, and what no flag of it
// does.
func (f *Features) runFlags() (flags []string, besides []string) {
	if f == nil || !f.Hintstream {
		return nil, nil
	}
	if !f.NoPins {
		flags = append(flags, "--pin-endpoint tcp://MOONCAKE-MASTER:50052 (or DYN_KVM_PIN_ENDPOINT)")
	}
	if f.KeepPinOnNextTurn {
		flags = append(flags, "--keep-pin-on-next-turn")
	}
	if f.NoPinRenewal {
		flags = append(flags, "--pin-renew-max 0")
	}
	if f.PinBudget {
		flags = append(flags, "--pin-budget-tokens N (the Mooncake store's bytes ÷ KV bytes per token ÷ the group's members; whatif's: the simulated L3's tokens)")
	}
	if f.Affinity {
		// On by default in run; the frontend's part is what makes it work.
		flags = append(flags, "--affinity-bucket hintstream_affinity (the default)")
		besides = append(besides, "the frontend passes each turn's recorded worker to the router (client.PreferredWorker)")
	}
	if f.NoPrefetch {
		besides = append(besides, "workers registered without hint endpoints (no run flag turns prefetch off alone)")
	}
	if f.L3Eviction != "" {
		besides = append(besides, "the Mooncake store set to "+strings.ToUpper(f.L3Eviction)+" eviction (a store setting, not hintstream's)")
	}
	return flags, besides
}
