package consumers

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/schemas"
)

// Headers set on a dead-lettered copy, so an operator can tell from the
// copy alone why and where it failed.
const (
	HeaderDLQReason  = schemas.HeaderDeadLetterReason
	HeaderDLQSubject = "Hintstream-Subject"
	HeaderDLQStream  = "Hintstream-Stream"
	HeaderDLQSeq     = "Hintstream-Stream-Seq"
	// HeaderDLQHeadersDropped holds how many header values of the
	// original were left out: more than 256, or 16 KiB, are not copied
	// (schemas.DefaultLimits bounds on NATS headers).
	HeaderDLQHeadersDropped = "Hintstream-Headers-Dropped"
	// HeaderDLQTruncated holds the original's data length when the copy
	// carries only its start: the whole would exceed the server's max
	// payload once the headers above are added.
	HeaderDLQTruncated = "Hintstream-Truncated"
)

// Bounds on the original headers a copy carries.
const (
	maxCopiedHeaders     = 256
	maxCopiedHeaderBytes = 16 << 10
)

// DeadLetter copies rejected messages to "<prefix>.<kind>".
type DeadLetter struct {
	js     jetstream.JetStream
	prefix string
}

// DefaultDeadLetterPrefix is the dead-letter subject prefix: copies go
// to <prefix>.<kind>.
const DefaultDeadLetterPrefix = "hintstream.dlq"

// NewDeadLetter returns a DeadLetter publishing under prefix (default
// DefaultDeadLetterPrefix); with a nil js it copies nothing (for replays). The subjects must be captured by a stream (the
// HINTSTREAM_DLQ default) for the copies to be kept.
func NewDeadLetter(js jetstream.JetStream, prefix string) *DeadLetter {
	if prefix == "" {
		prefix = DefaultDeadLetterPrefix
	}
	return &DeadLetter{js: js, prefix: prefix}
}

// Subject returns the dead-letter subject for kind.
func (d *DeadLetter) Subject(kind string) string { return d.prefix + "." + kind }

// dry reports a DeadLetter made with a nil JetStream (a replay): it
// copies nothing, since the live run already did.
func (d *DeadLetter) dry() bool { return d.js == nil }

// Publish stores a copy of msg with reason and its origin in headers. It
// waits for the stream's ack: a copy that was not stored must not let the
// caller terminate the original.
func (d *DeadLetter) Publish(ctx context.Context, kind, reason string, msg jetstream.Msg) error {
	if d.dry() {
		return nil
	}
	out := d.newCopy(kind, reason, msg.Subject(), msg.Headers())
	if md, err := msg.Metadata(); err == nil {
		out.Header.Set(HeaderDLQStream, md.Stream)
		out.Header.Set(HeaderDLQSeq, strconv.FormatUint(md.Sequence.Stream, 10))
		// One copy per original message, even if we are asked twice (a
		// redelivery after a crash between copy and term).
		out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream))
	}
	d.fit(out, msg.Data())
	if _, err := d.js.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("dead-letter copy to %s: %w", out.Subject, err)
	}
	return nil
}

// PublishStored copies the message at seq of stream (one JetStream gave up
// on) to "<prefix>.<kind>", like Publish.
func (d *DeadLetter) PublishStored(ctx context.Context, kind, reason, stream string, seq uint64) error {
	if d.dry() {
		return nil
	}
	s, err := d.js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		return err
	}
	out := d.newCopy(kind, reason, m.Subject, m.Header)
	out.Header.Set(HeaderDLQStream, stream)
	out.Header.Set(HeaderDLQSeq, strconv.FormatUint(seq, 10))
	out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", stream, seq))
	d.fit(out, m.Data)
	if _, err := d.js.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("dead-letter copy to %s: %w", out.Subject, err)
	}
	return nil
}

// newCopy starts the copy of a message from subject with headers hdr: the
// original headers when they are within bounds (a message rejected for
// its headers must not fail its copy for the same reason), then ours.
func (d *DeadLetter) newCopy(kind, reason, subject string, hdr nats.Header) *nats.Msg {
	out := nats.NewMsg(d.Subject(kind))
	if n, size := headerSize(hdr); n <= maxCopiedHeaders && size <= maxCopiedHeaderBytes {
		for k, vs := range hdr {
			for _, v := range vs {
				out.Header.Add(k, v)
			}
		}
	} else {
		out.Header.Set(HeaderDLQHeadersDropped, strconv.Itoa(n))
	}
	out.Header.Set(HeaderDLQReason, reason)
	out.Header.Set(HeaderDLQSubject, subject)
	return out
}

// fit sets data as out's, cut short (and said so) when the whole would
// exceed the server's max payload: an oversized copy is refused, and a
// refused copy keeps the original from being terminated.
func (d *DeadLetter) fit(out *nats.Msg, data []byte) {
	out.Data = data
	limit := d.js.Conn().MaxPayload()
	if limit <= 0 {
		return
	}
	const slack = 64 // the Truncated header itself, and the framing
	_, hsize := headerSize(out.Header)
	if int64(len(data)+hsize+slack) <= limit {
		return
	}
	keep := max(0, limit-int64(hsize+slack))
	out.Data = data[:min(int64(len(data)), keep)]
	out.Header.Set(HeaderDLQTruncated, strconv.Itoa(len(data)))
}

// headerSize returns the number of header values and their encoded size.
func headerSize(h nats.Header) (n, size int) {
	size = len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n++
			size += len(k) + len(v) + len(": \r\n")
		}
	}
	return n, size
}
