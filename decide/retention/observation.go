package retention

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ObservationVersion is the version of the observation batch format
// (docs/retention.md, "Groups").
const ObservationVersion = 1

// Limits of a decoded batch: what a member publishes stays far below them
// (a batch is cut at Group.MaxBatchBytes), so anything beyond is not ours.
const (
	maxBatchObservations = 1 << 16
	maxObservationKeys   = 1 << 16
	maxNameLen           = 1 << 10
)

// Kinds of observation.
const (
	ObserveRequest  = "request"   // a prompt's pages
	ObserveToolCall = "tool_call" // a response that ended in a tool call
)

// Observation is what a member's planner learns from one event, as the
// group's leader needs it: a prompt's page keys (Keys, of PageTokens
// tokens each) for session at event time At, or a tool call of session
// at At expected to take Expected.
type Observation struct {
	Kind       string        `json:"kind"`
	At         time.Time     `json:"-"`
	Session    string        `json:"session,omitempty"`
	Keys       []string      `json:"keys,omitempty"`
	PageTokens int           `json:"page_tokens,omitempty"`
	Expected   time.Duration `json:"-"`
}

type wireObservation struct {
	Observation
	AtMs       int64 `json:"at_ms"`
	ExpectedMs int64 `json:"expected_ms,omitempty"`
}

// Batch is one message on the observation subject: a member's
// observations in the order it made them.
type Batch struct {
	Version      int           `json:"v"`
	Member       string        `json:"member"`
	Observations []Observation `json:"-"`
}

type wireBatch struct {
	Batch
	Obs []wireObservation `json:"obs"`
}

// ErrMalformedBatch marks an observation batch that does not decode or
// validate; Reason says why, in a word fit for a metric label.
var ErrMalformedBatch = errors.New("retention: malformed observation batch")

// BatchError is a decode failure and its reason.
type BatchError struct {
	Reason string // "json", "version", "member", "kind", "size", "value"
	Err    error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%v (%s): %v", ErrMalformedBatch, e.Reason, e.Err)
}
func (e *BatchError) Unwrap() error { return ErrMalformedBatch }

// BatchErrorReasons are the Reason values of BatchError, for metrics.
var BatchErrorReasons = []string{"json", "version", "member", "kind", "size", "value"}

// EncodeBatch encodes b (version ObservationVersion).
func EncodeBatch(member string, obs []Observation) ([]byte, error) {
	w := wireBatch{Batch: Batch{Version: ObservationVersion, Member: member}, Obs: make([]wireObservation, len(obs))}
	for i, o := range obs {
		w.Obs[i] = wireObservation{Observation: o, AtMs: o.At.UnixMilli(), ExpectedMs: o.Expected.Milliseconds()}
	}
	return json.Marshal(w)
}

// DecodeBatch decodes and validates a batch. It never panics; a bad batch
// gives a *BatchError.
func DecodeBatch(data []byte) (Batch, error) {
	var w wireBatch
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return Batch{}, &BatchError{"json", err}
	}
	if dec.More() {
		return Batch{}, &BatchError{"json", errors.New("data after the batch")}
	}
	b := w.Batch
	switch {
	case b.Version != ObservationVersion:
		return Batch{}, &BatchError{"version", fmt.Errorf("version %d, want %d", b.Version, ObservationVersion)}
	case b.Member == "" || len(b.Member) > maxNameLen:
		return Batch{}, &BatchError{"member", fmt.Errorf("member name of %d bytes", len(b.Member))}
	case len(w.Obs) > maxBatchObservations:
		return Batch{}, &BatchError{"size", fmt.Errorf("%d observations", len(w.Obs))}
	}
	b.Observations = make([]Observation, len(w.Obs))
	for i, wo := range w.Obs {
		o := wo.Observation
		switch {
		case o.Kind != ObserveRequest && o.Kind != ObserveToolCall:
			return Batch{}, &BatchError{"kind", fmt.Errorf("observation %d: kind %q", i, o.Kind)}
		case len(o.Keys) > maxObservationKeys || len(o.Session) > maxNameLen:
			return Batch{}, &BatchError{"size", fmt.Errorf("observation %d: %d keys, session of %d bytes", i, len(o.Keys), len(o.Session))}
		case wo.AtMs <= 0 || wo.ExpectedMs < 0 || wo.ExpectedMs > int64(24*time.Hour/time.Millisecond):
			return Batch{}, &BatchError{"value", fmt.Errorf("observation %d: at %d ms, expected %d ms", i, wo.AtMs, wo.ExpectedMs)}
		case o.Kind == ObserveRequest && (o.PageTokens <= 0 || o.PageTokens > 1<<20 || len(o.Keys) == 0):
			return Batch{}, &BatchError{"value", fmt.Errorf("observation %d: %d keys of %d tokens", i, len(o.Keys), o.PageTokens)}
		}
		for _, k := range o.Keys {
			if k == "" || len(k) > maxNameLen {
				return Batch{}, &BatchError{"value", fmt.Errorf("observation %d: a key of %d bytes", i, len(k))}
			}
		}
		o.At, o.Expected = time.UnixMilli(wo.AtMs), time.Duration(wo.ExpectedMs)*time.Millisecond
		b.Observations[i] = o
	}
	return b, nil
}

// size is about what o takes in a batch.
func (o Observation) size() int {
	n := 64 + len(o.Session)
	for _, k := range o.Keys {
		n += len(k) + 3
	}
	return n
}
