package requesttrace

import (
	"bytes"
	"encoding/json"
)

// DecodeLine decodes one line of a request-trace file: the file sink's
// {"timestamp": ms, "event": record}, or a bare record (the stderr sink's,
// or a capture of the NATS subject). Blank lines are not records: the
// caller skips them.
func (l Limits) DecodeLine(line []byte) (*Record, error) {
	l = l.withDefaults()
	if len(line) > l.MaxBytes {
		return nil, bad(ReasonTooLarge, nil)
	}
	if ev, ok := unwrap(line); ok {
		return l.Decode(ev)
	}
	return l.Decode(line)
}

// unwrap returns the event of a file sink's line; ok is false for a bare
// record (one with a schema member) or what is not an object.
func unwrap(line []byte) (json.RawMessage, bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	if _, reason := walk(t, DefaultMaxDepth); reason != "" {
		return nil, false
	}
	var env struct {
		Event  json.RawMessage `json:"event"`
		Schema json.RawMessage `json:"schema"`
	}
	if json.Unmarshal(t, &env) != nil || env.Schema != nil || isNull(env.Event) {
		return nil, false
	}
	return env.Event, true
}

// IsRecordLine reports whether line looks like a request-trace record
// (bare or in the file sink's envelope): an object whose schema member,
// or its event's, is Dynamo's request-trace schema. Readers that take
// several formats detect this one by it.
func IsRecordLine(line []byte) bool {
	if ev, ok := unwrap(line); ok {
		line = ev
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(bytes.TrimSpace(line), &probe) == nil && probe.Schema == Schema
}
