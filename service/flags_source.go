package service

import (
	"flag"

	"github.com/hintstream/hintstream/ingest/requesttrace"
)

// What the frontend publishes (--source).
const (
	// SourceHintstream: hintstream's own request and response events
	// (llm.requests.<model>, llm.responses.<model>).
	SourceHintstream = "hintstream"
	// SourceDynamo: also Dynamo's request trace, as an unmodified Dynamo
	// publishes it with DYN_REQUEST_TRACE=1 and the nats sink
	// (docs/dynamo.md).
	SourceDynamo = "dynamo"
)

// sourceFlags are the --source flags' values.
type sourceFlags struct {
	source    string
	subject   string
	stream    string
	durable   string
	maxHashes int
}

// registerSourceFlags registers --source and the request trace's flags.
func (c *Config) registerSourceFlags(fs *flag.FlagSet) {
	f := &c.flags.run.source
	fs.StringVar(&f.source, "source", SourceHintstream, "what the frontend publishes: hintstream (request and response events) or dynamo (also Dynamo's request-trace records, DYN_REQUEST_TRACE=1 with the nats sink; see docs/dynamo.md)")
	fs.StringVar(&f.subject, "request-trace-subject", requesttrace.DefaultSubject, "subject of Dynamo's request-trace records (DYN_REQUEST_TRACE_NATS_SUBJECT), with --source dynamo")
	fs.StringVar(&f.stream, "request-trace-stream", requesttrace.DefaultTraceStream, "stream created on --request-trace-subject when no stream captures it (an existing one is attached as it is)")
	fs.StringVar(&f.durable, "request-trace-durable", "", "durable consumer name for request-trace records (default <group>-request-trace)")
	fs.IntVar(&f.maxHashes, "request-trace-max-hashes", requesttrace.DefaultMaxHashes, "most sequence hashes a request-trace record may carry; a longer prompt's record is dead-lettered")
}

// applySourceFlags sets RequestTrace with --source dynamo.
func (c *Config) applySourceFlags(f *runFlags) error {
	s := f.source
	switch s.source {
	case SourceHintstream:
		return nil
	case SourceDynamo:
	default:
		return flagError("--source %q: want %s or %s", s.source, SourceHintstream, SourceDynamo)
	}
	if s.subject == "" || s.stream == "" {
		return flagError("--request-trace-subject and --request-trace-stream must not be empty")
	}
	if s.maxHashes < 1 {
		return flagError("--request-trace-max-hashes must be at least 1, got %d", s.maxHashes)
	}
	if s.durable == "" {
		s.durable = f.group + "-request-trace"
	}
	c.RequestTrace = &RequestTraceConfig{Subject: s.subject, Stream: s.stream, Durable: s.durable,
		Limits: requesttrace.Limits{MaxHashes: s.maxHashes}}
	return nil
}
