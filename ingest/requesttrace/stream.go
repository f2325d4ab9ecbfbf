package requesttrace

import (
	"github.com/hintstream/hintstream/streams"
)

// Where Dynamo's nats sink publishes. It publishes with JetStream but
// creates no stream (sink.rs@0366e63a NatsRequestTraceSink), so
// hintstream creates one when absent, as for its own subjects.
const (
	// DefaultSubject is the sink's subject when DYN_REQUEST_TRACE_NATS_SUBJECT
	// is unset (config.rs@8e18e5d6 DEFAULT_NATS_SUBJECT).
	DefaultSubject = "dynamo.request_trace.v1"
	// DefaultTraceStream is the stream hintstream creates on the subject.
	DefaultTraceStream = "DYNAMO_REQUEST_TRACE"
	// DeadLetterKind names the dead-letter subject of refused records
	// and their counters.
	DeadLetterKind = "request_trace"
	// DefaultStreamMaxBytes bounds the stream hintstream creates.
	DefaultStreamMaxBytes = 1 << 30
)

// StreamConfig is the stream hintstream creates on subject when no stream
// captures it: bounded like the response stream (kept
// streams.DefaultRequestsMaxAge), whose part request_end records play.
func StreamConfig(subject string) streams.Config {
	c := streams.DefaultSet().Responses
	c.Name, c.Subjects = DefaultTraceStream, []string{subject}
	c.Description = "hintstream: Dynamo request-trace records"
	// request_payload records carry whole OpenAI bodies: bound the bytes
	// too, not only the age.
	c.MaxBytes = DefaultStreamMaxBytes
	return c
}
