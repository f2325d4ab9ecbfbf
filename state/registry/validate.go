package registry

import (
	"errors"
	"fmt"

	"github.com/hintstream/hintstream/schemas"
)

// Why the registry refused an entry, beyond schemas' Reason* constants:
// the label values of registry_invalid_records_total{reason}.
const (
	ReasonBadKey     = "bad_key"     // not a canonical decimal uint64
	ReasonIDMismatch = "id_mismatch" // worker_id differs from the key
	ReasonMalformed  = "malformed"   // not a decodable worker record
)

// errIDMismatch marks a record filed under another worker's key.
var errIDMismatch = errors.New("record worker_id disagrees with its key")

// errBadKey marks a key parseKey refused.
var errBadKey = errors.New("bad registry key")

// WithEndpointRules sets what a record's hint endpoints must be (default
// schemas.EndpointRules{}: tcp:// only, schemas.DefaultMaxDPRanks
// endpoints). A record breaking them is refused as a whole.
func WithEndpointRules(rules schemas.EndpointRules) Option {
	return func(o *options) { o.check.rules = rules }
}

// WithOnInvalid calls f with the reason (InvalidReason) of every entry
// revision the registry refuses, once per revision, from the watcher
// goroutine; f must be quick. For registry_invalid_records_total{reason}.
func WithOnInvalid(f func(reason string)) Option {
	return func(o *options) { o.check.onInvalid = f }
}

// InvalidReason maps a refusal to its metric label: a schemas.Reason*
// constant or one of this package's Reason* constants. The set is fixed,
// whatever the input.
func InvalidReason(err error) string {
	var re *schemas.RecordError
	switch {
	case errors.As(err, &re):
		return re.Reason
	case errors.Is(err, errBadKey):
		return ReasonBadKey
	case errors.Is(err, errIDMismatch):
		return ReasonIDMismatch
	case errors.Is(err, errEndpointClaimed):
		return ReasonEndpointClaimed
	}
	return ReasonMalformed
}

// recordCheck is how the registry validates entries and reports refusals.
type recordCheck struct {
	rules     schemas.EndpointRules
	onInvalid func(reason string)
}

func (c recordCheck) refused(err error) {
	if c.onInvalid != nil {
		c.onInvalid(InvalidReason(err))
	}
}

func (r *Registry) decode(id uint64, keyErr error, data []byte) (*schemas.WorkerRecord, error) {
	if keyErr != nil {
		return nil, fmt.Errorf("%w: %w", errBadKey, keyErr)
	}
	rec, err := (schemas.Limits{}).DecodeWorkerRecordWith(data, r.check.rules)
	if err != nil {
		return nil, err
	}
	if rec.WorkerID != id {
		return nil, fmt.Errorf("%w: worker_id %d under key %q", errIDMismatch, rec.WorkerID, Key(id))
	}
	return rec, nil
}
