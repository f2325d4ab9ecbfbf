package bridge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// batch is one EventBatch as the engine sent it.
type batch struct {
	seq     uint64
	payload []byte
}

// endSeq is vLLM's END_SEQ, (-1).to_bytes(8, "big", signed=True).
const endSeq = math.MaxUint64

// pollInterval bounds how long a blocked receive goes without looking at
// ctx, and so how long Run takes to return after cancellation.
const pollInterval = 100 * time.Millisecond

var errMalformed = errors.New("malformed")

// parseSeq reads an 8-byte big-endian sequence number.
func parseSeq(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: seq frame of %d bytes, want 8", errMalformed, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// checkPayload is a cheap sanity check, not a decode: an EventBatch is a
// msgpack map (tagged form) or array (array_like form).
func checkPayload(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty payload", errMalformed)
	}
	switch b := p[0]; {
	case b >= 0x80 && b <= 0x9f, b == 0xdc, b == 0xdd, b == 0xde, b == 0xdf:
		return nil
	}
	return fmt.Errorf("%w: payload starts with 0x%02x, not a msgpack map or array", errMalformed, p[0])
}

// parseLive reads a PUB message [topic, seq, payload].
func parseLive(frames [][]byte) (batch, error) {
	if len(frames) != 3 {
		return batch{}, fmt.Errorf("%w: %d frames, want [topic, seq, payload]", errMalformed, len(frames))
	}
	seq, err := parseSeq(frames[1])
	if err != nil {
		return batch{}, err
	}
	if seq > math.MaxInt64 { // vLLM's seq is a non-negative Python int
		return batch{}, fmt.Errorf("%w: seq %d out of range", errMalformed, seq)
	}
	if err := checkPayload(frames[2]); err != nil {
		return batch{}, err
	}
	return batch{seq: seq, payload: frames[2]}, nil
}

func temporary(err error) bool {
	switch zmq.AsErrno(err) {
	case zmq.Errno(syscall.EAGAIN), zmq.Errno(syscall.EINTR):
		return true
	}
	return false
}

func configure(s *zmq.Socket, steps ...func() error) error {
	for _, f := range steps {
		if err := f(); err != nil {
			s.Close()
			return err
		}
	}
	return nil
}

func openSub(zctx *zmq.Context, endpoint, topic string, hwm int) (*zmq.Socket, error) {
	s, err := zctx.NewSocket(zmq.SUB)
	if err != nil {
		return nil, err
	}
	err = configure(s,
		func() error { return s.SetRcvhwm(hwm) },
		func() error { return s.SetLinger(0) },
		func() error { return s.SetRcvtimeo(pollInterval) },
		// An engine restart should be picked up quickly; its first
		// batches are lost to the slow joiner anyway, and replay fetches
		// them.
		func() error { return s.SetReconnectIvl(100 * time.Millisecond) },
		func() error { return s.SetReconnectIvlMax(2 * time.Second) },
		func() error { return s.SetSubscribe(topic) },
		func() error { return s.Connect(endpoint) },
	)
	if err != nil {
		return nil, fmt.Errorf("bridge: SUB %s: %w", endpoint, err)
	}
	return s, nil
}

func openDealer(zctx *zmq.Context, endpoint string) (*zmq.Socket, error) {
	s, err := zctx.NewSocket(zmq.DEALER)
	if err != nil {
		return nil, err
	}
	err = configure(s,
		// The ROUTER drops replies past the pipe's high-water mark, so
		// our side takes them all: the engine's buffer bounds the total.
		func() error { return s.SetRcvhwm(0) },
		func() error { return s.SetLinger(0) },
		func() error { return s.SetRcvtimeo(pollInterval) },
		func() error { return s.SetSndtimeo(pollInterval) },
		func() error { return s.Connect(endpoint) },
	)
	if err != nil {
		return nil, fmt.Errorf("bridge: DEALER %s: %w", endpoint, err)
	}
	return s, nil
}

// replayer asks the engine's ROUTER for buffered batches. Only Run's
// goroutine uses it.
type replayer struct {
	zctx     *zmq.Context
	endpoint string
	timeout  time.Duration
	max      int
	sock     *zmq.Socket // nil until first used, and after a failure
	// onMalformed counts a frame whose payload fails checkPayload; the
	// frame is left out and its seq becomes a hole in the replay.
	onMalformed func(seq uint64, err error)
}

// reset drops the socket so that a late answer to a failed request can
// never be read as the answer to the next one.
func (r *replayer) reset() {
	if r.sock != nil {
		r.sock.Close()
		r.sock = nil
	}
}

func (r *replayer) close() { r.reset() }

// fetch returns the engine's buffered batches with seq >= from, oldest
// first, in strictly increasing seq. It fails with ErrReplay when a
// frame takes longer than the timeout or the answer breaks the protocol,
// and with ctx.Err() when ctx ends.
func (r *replayer) fetch(ctx context.Context, from uint64) ([]batch, error) {
	if r.sock == nil {
		s, err := openDealer(r.zctx, r.endpoint)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrReplay, err)
		}
		r.sock = s
	}
	req := binary.BigEndian.AppendUint64(nil, from)
	if err := r.send([]byte{}, req); err != nil {
		r.reset()
		return nil, fmt.Errorf("%w: send request: %v", ErrReplay, err)
	}
	var out []batch
	deadline := time.Now().Add(r.timeout)
	for {
		if err := ctx.Err(); err != nil {
			r.reset()
			return nil, err
		}
		if time.Now().After(deadline) {
			r.reset()
			return nil, fmt.Errorf("%w: no frame from %s within %v (%d batches so far)",
				ErrReplay, r.endpoint, r.timeout, len(out))
		}
		frames, err := r.sock.RecvMessageBytes(0)
		if temporary(err) {
			continue
		}
		if err != nil {
			r.reset()
			return nil, fmt.Errorf("%w: receive: %v", ErrReplay, err)
		}
		deadline = time.Now().Add(r.timeout)
		// DEALER sees the ROUTER's [b"", seq, payload].
		if len(frames) != 3 || len(frames[0]) != 0 {
			r.reset()
			return nil, fmt.Errorf("%w: reply of %d frames, want [\"\", seq, payload]", ErrReplay, len(frames))
		}
		seq, err := parseSeq(frames[1])
		if err != nil {
			r.reset()
			return nil, fmt.Errorf("%w: %v", ErrReplay, err)
		}
		if seq == endSeq {
			return out, nil
		}
		if seq < from || (len(out) > 0 && seq <= out[len(out)-1].seq) {
			r.reset()
			return nil, fmt.Errorf("%w: seq %d out of order (asked from %d)", ErrReplay, seq, from)
		}
		if len(out) == r.max {
			r.reset()
			return nil, fmt.Errorf("%w: more than %d batches", ErrReplay, r.max)
		}
		if err := checkPayload(frames[2]); err != nil {
			r.onMalformed(seq, err)
			continue
		}
		out = append(out, batch{seq: seq, payload: frames[2]})
	}
}

func (r *replayer) send(frames ...[]byte) error {
	for i, f := range frames {
		flag := zmq.SNDMORE
		if i == len(frames)-1 {
			flag = 0
		}
		if _, err := r.sock.SendBytes(f, flag); err != nil {
			return err
		}
	}
	return nil
}
