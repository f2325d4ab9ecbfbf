package consumers

import (
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler decides on one trigger message and returns its Outcome; the
// trigger settles the message by it (settle): ack, nak with a delay,
// terminate with the reason, or leave it to the sender. A Handler neither
// settles nor dead-letters, as a watermill message.HandlerFunc returns its
// result and the router acks or nacks.
type Handler func(msg jetstream.Msg) engine.Outcome

// Middleware wraps a Handler, as watermill's message.HandlerMiddleware
// does.
type Middleware func(Handler) Handler

// deadLettering is the Middleware that keeps a rejected trigger event: it
// counts the Reject by its reason and copies the message, with the
// reason, to the dead-letter subject before the trigger terminates it.
// When the copy is not stored, terminating would lose the event, so the
// Outcome becomes a retry after a second and the event comes back. This
// is watermill's poison queue (message/router/middleware/poison.go,
// ThreeDotsLabs/watermill@52372949daf6dc93d8cee6373a7f795171fbd443):
// the handler's failure is published aside and the router settles the
// message; a failed publish leaves the failure for the router to nack.
func (r *rejecter) deadLettering(next Handler) Handler {
	return func(msg jetstream.Msg) engine.Outcome {
		out := next(msg)
		if out.Verdict != engine.Reject {
			return out
		}
		reason := out.Reason()
		r.counters.Trigger(r.kind).Malformed.Inc(reason)
		// The copy waits for the dead-letter stream's ack; keep the message
		// ours meanwhile rather than let AckWait hand it to another member.
		_ = msg.InProgress()
		ctx, cancel := opContext(r.ctx)
		defer cancel()
		if err := r.dlq.Publish(ctx, r.kind, reason, msg); err != nil {
			r.log.Error("dead-letter failed; will redeliver", "err", err)
			return engine.RetryAfter(time.Second, err)
		}
		return out
	}
}

// deadLetter keeps a state event that can never be applied (a
// *schemas.DecodeError, err): it counts it by its reason and copies it to
// the dead-letter subject; the consumer skips it (state events are not
// acked: an ordered consumer moves on). It is called from process, not
// wrapped around the apply: one frame less on every message's way to the
// index.
func (c *StateConsumer) deadLetter(msg jetstream.Msg, de *schemas.DecodeError, err error) {
	c.st.Malformed.Inc(de.Reason)
	ctx, cancel := opContext(c.ctx)
	defer cancel()
	if dErr := c.dlq.Publish(ctx, c.cfg.Kind, de.Reason, msg); dErr != nil {
		c.st.DeadLetterErrors.Inc()
		c.log.Error("dead-letter failed", "err", dErr)
	}
	c.log.Warn("malformed state event skipped", "subject", msg.Subject(), "reason", de.Reason, "err", err)
}
