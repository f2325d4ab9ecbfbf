package registry

import (
	"errors"
	"fmt"
)

// ReasonEndpointClaimed labels a record listing a hint endpoint that
// another registered worker lists already: hintstream would send the
// second worker's hints to the first, which could not tell them apart
// from its own.
const ReasonEndpointClaimed = "endpoint_claimed"

// errEndpointClaimed marks a record refused for an endpoint already taken.
var errEndpointClaimed = errors.New("hint endpoint claimed by another worker")

// checkClaims refuses rec if one of its endpoints belongs to a worker
// other than id. The first claimant keeps it until its record goes: a
// watcher replays the bucket in stream order, so every member agrees
// who came first.
func (r *Registry) checkClaims(id uint64, eps []string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for i, ep := range eps {
		if owner, ok := r.claims[ep]; ok && owner != id {
			return fmt.Errorf("%w: hint_endpoints[%d] %.80q is worker %d's", errEndpointClaimed, i, ep, owner)
		}
	}
	return nil
}

// claim records id's endpoints, dropping those of prev (its previous
// record's). Callers hold r.mu.
func (r *Registry) claim(id uint64, prev, eps []string) {
	r.unclaim(id, prev)
	for _, ep := range eps {
		r.claims[ep] = id
	}
}

// unclaim drops id's claims on eps. Callers hold r.mu.
func (r *Registry) unclaim(id uint64, eps []string) {
	for _, ep := range eps {
		if r.claims[ep] == id {
			delete(r.claims, ep)
		}
	}
}

// Claimed reports whether a registered worker lists endpoint. Claims
// make an endpoint one worker's, so this is also whether anything the
// registry holds still sends to it; it is up to date when OnChange runs.
func (r *Registry) Claimed(endpoint string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.claims[endpoint]
	return ok
}
