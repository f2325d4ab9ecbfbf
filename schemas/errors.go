package schemas

import (
	"errors"
	"fmt"
)

// ErrMalformed matches (errors.Is) every *DecodeError: the input can never
// be processed and must be terminated, not retried.
var ErrMalformed = errors.New("malformed event")

// DecodeError says which kind of event failed to decode and why. Reason is
// short and stable enough to use as a metric label and a dead-letter header.
type DecodeError struct {
	Kind   string // "request", "response", "router_event", "load", "worker"
	Reason string // e.g. "missing request_id", "truncated msgpack"
	Err    error  // underlying codec error, if any
}

func (e *DecodeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Reason)
}

// Unwrap returns the codec error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrMalformed) true.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

func malformed(kind, reason string, err error) error {
	return &DecodeError{Kind: kind, Reason: reason, Err: err}
}

// CommonDecodeReasons are the DecodeError reasons any event kind can
// fail with, before its own fields are read (size, framing, encoding,
// NATS headers). Counters list them at 0 from start-up, so a first
// malformed event shows as an increase, not as a new series.
var CommonDecodeReasons = []string{"message too large", "neither JSON nor a msgpack map", "invalid JSON",
	"wrong JSON type", "invalid UTF-8", "trailing bytes after msgpack", "too many NATS headers", "NATS headers too large"}
