package actions

import (
	"errors"
	"time"
)

// Hint is one encoded envelope on its way to one endpoint.
type Hint struct {
	MessageID string    // for logs only
	Body      []byte    // the encoded envelope; not modified by the caller after Send
	Deadline  time.Time // past it the hint is dropped, never sent; required
	// Done, when set, is called once a hint that Send accepted is settled:
	// true once ZMQ took it and the settle delay passed (WithSettleDelay),
	// false when it was dropped. Done(true) runs on the pool's settle
	// goroutine (or, with no settle delay, on the endpoint's sender
	// goroutine or within Send itself), Done(false) on the sender
	// goroutine or within Send; it must be quick and must not take a lock
	// the caller of Send holds. Consumers ack their message there, so a
	// crash before the hint leaves loses no trigger. Exception: past
	// WithMaxHeld waiting hints on one endpoint, Send itself calls
	// Done(false) once the hint is queued.
	Done func(sent bool)
	// Release, when set, is called once with Body when the pool no longer
	// reads it: ZMQ has taken its own copy, or the hint was dropped. The
	// caller may then reuse the buffer (engine.Engine recycles its envelope
	// buffers). It runs on the goroutine that sent or dropped
	// the hint, before or after Done. When Send returns an error it is not
	// called: the body is the caller's again.
	Release func(body []byte)
	// Dropped, when set, is called once if the hint is never handed to
	// ZMQ (expired, aborted, refused by the socket); unlike Done(false)
	// it is not called for a hint released early past WithMaxHeld, which
	// is still delivered. The affinity record of a prefetch that never
	// left is withdrawn there.
	Dropped func()
	// Sent, when set, is called once when ZMQ took the hint for a
	// connected peer (the sockets are ZMQ_IMMEDIATE, so a hint to an
	// absent peer is never taken), before the settle delay and before
	// Done(true), on the goroutine that sent it (possibly within Send).
	// A prefetch's affinity record is written there, so a session's turn
	// is never sent to a worker whose prefetch did not leave. It must be
	// quick and must not block.
	Sent func()
}

// NotifySent calls h.Sent, if set: a Sender's implementation calls it
// once the transport took the hint for a connected peer.
func (h Hint) NotifySent() {
	if h.Sent != nil {
		h.Sent()
	}
}

// NotifyDone calls h.Done, if set, once the hint is settled.
func (h Hint) NotifyDone(sent bool) {
	if h.Done != nil {
		h.Done(sent)
	}
}

// NotifyRelease calls h.Release, if set, once the body is no longer read.
func (h Hint) NotifyRelease() {
	if h.Release != nil {
		h.Release(h.Body)
	}
}

// Sender hands a hint to its endpoint: a ZeroMQ pool (package zmqsend),
// a Recorder, or an in-process simulation. Send never blocks on the
// peer. It fails with one of the sentinel errors below (wrapped), or
// another error for a hint that cannot be sent at all; after an error
// none of h's callbacks is called and the body is the caller's again.
type Sender interface {
	Send(endpoint string, h Hint) error
}

// Sentinel errors a Sender returns.
var (
	// ErrQueueFull: the endpoint's queue is full (its peer is slow or down).
	ErrQueueFull = errors.New("actions: hint queue full")
	// ErrClosed: the pool is closed.
	ErrClosed = errors.New("actions: pool closed")
	// ErrExpired: the hint's deadline has already passed (or is unset).
	ErrExpired = errors.New("actions: hint expired")
	// ErrEndpoint: the endpoint cannot be connected (bad address).
	ErrEndpoint = errors.New("actions: bad endpoint")
	// ErrBudget: every sender of a bounded set of sockets has hints in
	// flight, so a new endpoint gets none.
	ErrBudget = errors.New("actions: socket budget full")
)

// Reasons a hint is dropped, as keys of EndpointStats.Dropped.
const (
	DropExpired   = "expired"    // its deadline passed, queued or while retrying
	DropQueueFull = "queue_full" // Send found the endpoint's queue full
	DropRemoved   = "removed"    // still queued when Pool.Remove closed the endpoint
	DropClosed    = "closed"     // still queued when Pool.Close ran out of time
	DropError     = "error"      // the socket failed with an error retrying cannot fix
	DropBudget    = "budget"     // a new endpoint found every sender of the socket budget busy (ErrBudget)
)

// DropReason names why a Sender refused a hint, as the
// hintstream_hints_*_dropped_total counters label it: queue_full,
// expired, closed, budget, or error for anything else.
func DropReason(err error) string {
	switch {
	case errors.Is(err, ErrQueueFull):
		return DropQueueFull
	case errors.Is(err, ErrExpired):
		return DropExpired
	case errors.Is(err, ErrClosed):
		return DropClosed
	case errors.Is(err, ErrBudget):
		return DropBudget
	}
	return DropError
}
