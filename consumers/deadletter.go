package consumers

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers set on a dead-lettered copy, so an operator can tell from the
// copy alone why and where it failed.
const (
	HeaderDLQReason  = "Hintstream-Error"
	HeaderDLQSubject = "Hintstream-Subject"
	HeaderDLQStream  = "Hintstream-Stream"
	HeaderDLQSeq     = "Hintstream-Stream-Seq"
)

// DeadLetter copies rejected messages to "<prefix>.<kind>".
type DeadLetter struct {
	js     jetstream.JetStream
	prefix string
}

// NewDeadLetter returns a DeadLetter publishing under prefix (default
// "hintstream.dlq"); with a nil js it copies nothing (for replays). The subjects must be captured by a stream (the
// HINTSTREAM_DLQ default) for the copies to be kept.
func NewDeadLetter(js jetstream.JetStream, prefix string) *DeadLetter {
	if prefix == "" {
		prefix = "hintstream.dlq"
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
	out := nats.NewMsg(d.Subject(kind))
	out.Data = msg.Data()
	for k, vs := range msg.Headers() {
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	out.Header.Set(HeaderDLQReason, reason)
	out.Header.Set(HeaderDLQSubject, msg.Subject())
	if md, err := msg.Metadata(); err == nil {
		out.Header.Set(HeaderDLQStream, md.Stream)
		out.Header.Set(HeaderDLQSeq, strconv.FormatUint(md.Sequence.Stream, 10))
		// One copy per original message, even if we are asked twice (a
		// redelivery after a crash between copy and term).
		out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream))
	}
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
	out := nats.NewMsg(d.Subject(kind))
	out.Data = m.Data
	for k, vs := range m.Header {
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	out.Header.Set(HeaderDLQReason, reason)
	out.Header.Set(HeaderDLQSubject, m.Subject)
	out.Header.Set(HeaderDLQStream, stream)
	out.Header.Set(HeaderDLQSeq, strconv.FormatUint(seq, 10))
	out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", stream, seq))
	if _, err := d.js.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("dead-letter copy to %s: %w", out.Subject, err)
	}
	return nil
}
