package engine

import (
	"errors"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// Verdict is what a trigger event (a request or a response) came to, for
// its transport to settle: the decisions say it, the JetStream consumer
// (package consumers) acts on it, a replay counts it.
type Verdict int

const (
	// Ack: the event is done with (a hint was made or none was due).
	Ack Verdict = iota
	// Retry: a transient failure; hand the event back after RetryAfter.
	Retry
	// Held: a hint was queued; the event is settled when the hint has
	// left or was dropped (Delivery.Done is called then).
	Held
	// Reject: the event is malformed (Err says why, a
	// *schemas.DecodeError names the reason); dead-letter it.
	Reject
)

// String names the verdict, for logs and counters.
func (v Verdict) String() string {
	switch v {
	case Ack:
		return "ack"
	case Retry:
		return "retry"
	case Held:
		return "held"
	case Reject:
		return "reject"
	}
	return "unknown"
}

// Outcome is a decision's verdict on its event.
type Outcome struct {
	Verdict    Verdict
	RetryAfter time.Duration // Retry only
	Err        error         // Retry and Reject: the cause
}

// Done is the Outcome of an event settled at once.
func Done() Outcome { return Outcome{Verdict: Ack} }

// RetryAfter is the Outcome of a transient failure.
func RetryAfter(d time.Duration, err error) Outcome {
	return Outcome{Verdict: Retry, RetryAfter: d, Err: err}
}

// HeldUntilSent is the Outcome of an event whose hint was queued.
func HeldUntilSent() Outcome { return Outcome{Verdict: Held} }

// Rejected is the Outcome of a malformed event.
func Rejected(err error) Outcome { return Outcome{Verdict: Reject, Err: err} }

// Delivery is what a decision knows of how its event arrived, apart from
// the transport: its stream position and time, how often it came, and the
// hooks the transport gives it. A replay gives the stored message's
// sequence and time and no hooks.
type Delivery struct {
	// Seq is the event's stream sequence (the request index points at
	// it); Time its stream timestamp, used when the event carries none of
	// its own. Unknown says neither could be read (a transient failure).
	Seq     uint64
	Time    time.Time
	Unknown error
	// Delivered counts deliveries, this one included (1 in a replay).
	Delivered uint64
	// Done, when set, is called once a Held event's hint has left (true)
	// or was dropped (false).
	Done func(sent bool)
	// Working, when set, tells the transport the event is still being
	// worked on (a slow lookup), so it is not handed to another member.
	Working func()
}

// Settled calls Done, if set.
func (d Delivery) Settled(sent bool) {
	if d.Done != nil {
		d.Done(sent)
	}
}

// InProgress calls Working, if set.
func (d Delivery) InProgress() {
	if d.Working != nil {
		d.Working()
	}
}

// Reason is a Reject's reason as counted and dead-lettered: the
// *schemas.DecodeError's, or "malformed".
func (o Outcome) Reason() string {
	var de *schemas.DecodeError
	if errors.As(o.Err, &de) {
		return de.Reason
	}
	return "malformed"
}
