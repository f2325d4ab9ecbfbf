package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// Headers on every republished batch, besides schemas.HeaderBridge*.
const (
	HeaderContentType = "Content-Type"
	ContentType       = "application/msgpack"
)

// MsgID is the Nats-Msg-Id of a batch: worker, dp rank, epoch and seq.
func MsgID(worker uint64, dpRank uint32, epoch, seq uint64) string {
	return fmt.Sprintf("%d-%d-%d-%d", worker, dpRank, epoch, seq)
}

// jsErrCodeMessageTooBig is the server's "message size exceeds maximum
// allowed" (nats.go has no constant for it).
const jsErrCodeMessageTooBig jetstream.ErrorCode = 10054

// permanent: retrying the same message cannot succeed.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeMessageTooBig {
		return true
	}
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject)
}

// publish stores one batch under the current epoch, waiting for the ack
// and retrying with backoff until it succeeds, ctx ends (the error is
// then ctx's), or the error is permanent (the batch is counted as
// dropped and logged; publish returns nil). It reports whether JetStream
// stored the batch (false for a duplicate or a dropped batch).
func (r *run) publish(ctx context.Context, b batch) (bool, error) {
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, MsgID(r.cfg.WorkerID, r.cfg.DpRank, r.epoch, b.seq))
	h.Set(schemas.HeaderBridgeSeq, strconv.FormatUint(b.seq, 10))
	h.Set(schemas.HeaderBridgeEpoch, strconv.FormatUint(r.epoch, 10))
	h.Set(schemas.HeaderBridgeDpRank, strconv.FormatUint(uint64(r.cfg.DpRank), 10))
	h.Set(HeaderContentType, ContentType)
	msg := &nats.Msg{Subject: r.subject, Header: h, Data: b.payload}

	var bo *backoff.ExponentialBackOff
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, r.o.publishTimeout)
		ack, err := r.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			r.seen.put(b)
			if ack.Duplicate {
				r.st.duplicates.Add(1)
				return false, nil
			}
			r.st.published.Add(1)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		r.st.publishErrors.Add(1)
		if permanent(err) {
			r.st.dropped.Add(1)
			r.log.Error("batch dropped: JetStream will never take it", "seq", b.seq, "bytes", len(b.payload), "err", err)
			return false, nil
		}
		if attempt&(attempt-1) == 0 { // 1, 2, 4, 8, ...: visible, not a flood
			r.log.Warn("publish failed, retrying", "seq", b.seq, "attempt", attempt, "err", err)
		}
		if bo == nil {
			bo = backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(20*time.Millisecond),
				backoff.WithMaxInterval(2*time.Second),
				backoff.WithMaxElapsedTime(0), // only ctx ends the retries
			)
		}
		if timer == nil {
			timer = time.NewTimer(bo.NextBackOff())
		} else {
			timer.Reset(bo.NextBackOff())
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// stored is the last batch a bridge published for this subject and dp
// rank, as found in the stream.
type stored struct {
	epoch, seq uint64
	payload    []byte
}

// maxStoredScan bounds how far back lookupStored searches past other dp
// ranks' and foreign messages on the same subject.
const maxStoredScan = 256

// lookupStored finds the last batch published for this subject and dp
// rank. nil means none (a fresh start). It fails with ErrNoStream when no
// stream captures the subject.
func (r *run) lookupStored(ctx context.Context) (*stored, error) {
	name, err := r.js.StreamNameBySubject(ctx, r.subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %q (create a stream for it, e.g. with `hintstream bridge`)", ErrNoStream, r.subject)
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: look up the stream of %q: %w", r.subject, err)
	}
	st, err := r.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("bridge: stream %q: %w", name, err)
	}
	m, err := st.GetLastMsgForSubject(ctx, r.subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: last message on %q: %w", r.subject, err)
	}
	seq := m.Sequence
	for scanned := 0; scanned <= maxStoredScan; scanned++ {
		if m != nil {
			if s, ok := r.ours(m); ok {
				return s, nil
			}
		}
		if seq <= 1 {
			break
		}
		seq--
		m, err = st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) { // deleted or purged
			m = nil
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bridge: stream %q message %d: %w", name, seq, err)
		}
	}
	r.log.Info("no earlier batch of this dp rank found near the end of the stream; starting a new epoch",
		"stream", name, "scanned", maxStoredScan)
	return nil, nil
}

// ours reads a stored message as one of this bridge's batches.
func (r *run) ours(m *jetstream.RawStreamMsg) (*stored, bool) {
	if m.Subject != r.subject || m.Header == nil {
		return nil, false
	}
	rank, err1 := strconv.ParseUint(m.Header.Get(schemas.HeaderBridgeDpRank), 10, 32)
	epoch, err2 := strconv.ParseUint(m.Header.Get(schemas.HeaderBridgeEpoch), 10, 64)
	seq, err3 := strconv.ParseUint(m.Header.Get(schemas.HeaderBridgeSeq), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || uint32(rank) != r.cfg.DpRank {
		return nil, false
	}
	return &stored{epoch: epoch, seq: seq, payload: m.Data}, true
}

// seenRing remembers a hash of the payload published under each recent
// seq of the current epoch, so that a batch seen again (live after a
// replay, or in a later replay) is told apart from a restarted engine's
// different batch under the same seq.
type seenRing struct {
	slots []seenSlot
}

type seenSlot struct {
	seq, hash uint64
	ok        bool
}

const seenRingSize = 1 << 14

func newSeenRing() *seenRing { return &seenRing{slots: make([]seenSlot, seenRingSize)} }

func (s *seenRing) put(b batch) {
	s.slots[b.seq%seenRingSize] = seenSlot{seq: b.seq, hash: xxh3.Hash(b.payload), ok: true}
}

// match says whether b's seq is remembered (known) and, if so, whether
// its payload is the one published then (same).
func (s *seenRing) match(b batch) (same, known bool) {
	sl := s.slots[b.seq%seenRingSize]
	if !sl.ok || sl.seq != b.seq {
		return false, false
	}
	return sl.hash == xxh3.Hash(b.payload), true
}

func (s *seenRing) has(seq uint64) bool {
	sl := s.slots[seq%seenRingSize]
	return sl.ok && sl.seq == seq
}

func (s *seenRing) reset() { clear(s.slots) }
