package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// Bridge republishes one engine's KV-event stream (one worker, one dp
// rank) to JetStream. See the package doc for the wire and the rules.
type Bridge struct {
	js      jetstream.JetStream
	cfg     Config
	o       options
	running atomic.Bool
	st      counters
}

type counters struct {
	received, replayed, published, duplicates, gaps, lost, restarts,
	malformed, replayFailures, publishErrors, dropped atomic.Uint64
}

// New returns a Bridge; nothing happens until Run.
func New(js jetstream.JetStream, cfg Config, opts ...Option) *Bridge {
	return &Bridge{js: js, cfg: cfg, o: buildOptions(opts)}
}

// Stats returns the counters so far; safe to call at any time.
func (b *Bridge) Stats() Stats {
	c := &b.st
	return Stats{
		Received: c.received.Load(), Replayed: c.replayed.Load(), Published: c.published.Load(),
		Duplicates: c.duplicates.Load(), Gaps: c.gaps.Load(), Lost: c.lost.Load(),
		Restarts: c.restarts.Load(), Malformed: c.malformed.Load(), ReplayFailures: c.replayFailures.Load(),
		PublishErrors: c.publishErrors.Load(), Dropped: c.dropped.Load(),
	}
}

// Run connects to the engine, resumes from what the stream already holds
// (see the package doc) and republishes until ctx ends, then closes its
// sockets and returns nil. It returns early with an error wrapping
// ErrConfig (bad Config), ErrNoStream (no stream captures the subject),
// ErrRunning (another Run of b is under way), or a socket or JetStream
// error at start-up. Replay and publish failures after start-up are
// counted, logged and retried, never returned. Run may be called again
// after it returns; counters carry on.
func (b *Bridge) Run(ctx context.Context) error {
	if err := b.cfg.validate(); err != nil {
		return err
	}
	if !b.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.running.Store(false)
	r, err := b.newRun()
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return r.loop(ctx)
}

// run is the state of one Run; only Run's goroutine touches it, and so
// its sockets.
type run struct {
	js      jetstream.JetStream
	cfg     Config
	o       options
	st      *counters
	log     *slog.Logger
	subject string

	zctx *zmq.Context
	sub  *zmq.Socket
	rep  *replayer // nil without a replay endpoint
	seen *seenRing

	epoch          uint64
	haveNext       bool
	next           uint64 // the seq expected next in this epoch
	haveLive       bool
	lastLive       uint64 // the last seq read from the SUB socket
	haveReplayHigh bool
	replayHigh     uint64 // the highest seq a replay returned in this epoch
}

func (b *Bridge) newRun() (*run, error) {
	r := &run{
		js: b.js, cfg: b.cfg, o: b.o, st: &b.st, subject: b.cfg.subject(), seen: newSeenRing(),
		log: b.o.log.With("worker_id", b.cfg.WorkerID, "dp_rank", b.cfg.DpRank, "endpoint", b.cfg.Endpoint),
	}
	zctx, err := zmq.NewContext()
	if err != nil {
		return nil, fmt.Errorf("bridge: zmq context: %w", err)
	}
	r.zctx = zctx
	// SUB first: live batches queue in it while start-up replays.
	if r.sub, err = openSub(zctx, b.cfg.Endpoint, b.cfg.Topic, b.o.rcvHWM); err != nil {
		r.close()
		return nil, err
	}
	if b.cfg.ReplayEndpoint != "" {
		r.rep = &replayer{zctx: zctx, endpoint: b.cfg.ReplayEndpoint, timeout: b.o.replayTimeout,
			max: b.o.maxReplay, onMalformed: func(seq uint64, err error) { r.malformed("replay", err, "seq", seq) }}
		// Connect now so that a bad endpoint fails Run, not every replay.
		if r.rep.sock, err = openDealer(zctx, b.cfg.ReplayEndpoint); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *run) close() {
	if r.sub != nil {
		r.sub.Close()
	}
	if r.rep != nil {
		r.rep.close()
	}
	r.zctx.Term()
}

func (r *run) start(ctx context.Context) error {
	s, err := r.lookupStored(ctx)
	if err != nil {
		return err
	}
	if s != nil {
		r.epoch = s.epoch
		r.haveNext, r.next = true, s.seq+1
		r.seen.put(batch{seq: s.seq, payload: s.payload})
		r.log.Info("found earlier batches in the stream", "epoch", s.epoch, "last_seq", s.seq)
	} else {
		r.newEpoch()
	}
	if r.rep == nil {
		return nil
	}
	// Without an earlier batch, the first one replayed (from 0, or from
	// WithReplayFrom) or received sets where this epoch's seq begins.
	return r.catchUp(ctx, nil, r.o.replayFrom)
}

func (r *run) loop(ctx context.Context) error {
	r.log.Info("bridging", "subject", r.subject, "replay", r.cfg.ReplayEndpoint, "epoch", r.epoch)
	for ctx.Err() == nil {
		frames, err := r.sub.RecvMessageBytes(0)
		if temporary(err) {
			continue // receive timeout: look at ctx again
		}
		if err != nil {
			return fmt.Errorf("bridge: receive from %s: %w", r.cfg.Endpoint, err)
		}
		b, err := parseLive(frames)
		if err != nil {
			r.malformed("live", err)
			continue
		}
		if err := r.onLive(ctx, b); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (r *run) malformed(where string, err error, attrs ...any) {
	n := r.st.malformed.Add(1)
	if n&(n-1) == 0 { // 1, 2, 4, 8, ...: visible, not a flood
		r.log.Warn("malformed engine message skipped", append([]any{"from", where, "err", err, "malformed_total", n}, attrs...)...)
	}
}

// onLive handles one batch read from the SUB socket.
func (r *run) onLive(ctx context.Context, b batch) error {
	r.st.received.Add(1)
	switch {
	case r.haveLive && b.seq <= r.lastLive:
		// One PUB connection delivers seqs in order: they went back.
		r.restarted(fmt.Sprintf("live seq %d after %d", b.seq, r.lastLive), &b)
	case r.haveNext && b.seq < r.next:
		same, known := r.seen.match(b)
		if r.haveReplayHigh && b.seq <= r.replayHigh && (same || !known) {
			// Already published from a replay that ran ahead of the SUB.
			r.haveLive, r.lastLive = true, b.seq
			r.st.duplicates.Add(1)
			return nil
		}
		r.restarted(fmt.Sprintf("live seq %d below the next expected %d", b.seq, r.next), &b)
	}
	r.haveLive, r.lastLive = true, b.seq
	if !r.haveNext || b.seq == r.next {
		_, err := r.advance(ctx, b, false)
		return err
	}
	r.st.gaps.Add(1)
	if r.rep != nil {
		r.log.Info("gap in the engine's seq; asking for replay", "from_seq", r.next, "to_seq", b.seq-1)
		return r.catchUp(ctx, &b, nil)
	}
	from := r.next
	if _, err := r.advance(ctx, b, false); err != nil {
		return err
	}
	r.log.Warn("gap in the engine's seq; no replay endpoint, so these batches are lost",
		"from_seq", from, "to_seq", b.seq-1, "lost", b.seq-from)
	return nil
}

// advance publishes b as the next batch of this epoch (b.seq >= r.next
// when r.haveNext) and returns how many seqs before it were skipped; they
// are counted as lost.
func (r *run) advance(ctx context.Context, b batch, replayed bool) (uint64, error) {
	var missing uint64
	if r.haveNext && b.seq > r.next {
		missing = b.seq - r.next
		r.st.lost.Add(missing)
	}
	stored, err := r.publish(ctx, b)
	if err != nil {
		return missing, err
	}
	if stored && replayed {
		r.st.replayed.Add(1)
	}
	r.haveNext, r.next = true, b.seq+1
	return missing, nil
}

// catchUp asks the engine to replay from r.next (from one earlier, to
// check that the engine is the incarnation we published from; from
// republishFrom if lower or nothing is known yet, publishing those
// again) and publishes in order what the stream lacks. held is the live
// batch that revealed a gap, nil at start-up; it goes out after the
// replay if the replay lacked it.
func (r *run) catchUp(ctx context.Context, held *batch, republishFrom *uint64) error {
	from, verify := uint64(0), false
	if r.haveNext {
		from = r.next
		if r.next > 0 && r.seen.has(r.next-1) {
			from, verify = r.next-1, true
		}
	}
	if republishFrom != nil && (*republishFrom < from || !r.haveNext) {
		from = *republishFrom
	}
	frames, err := r.rep.fetch(ctx, from)
	if err == nil && verify && !r.sameIncarnation(frames) {
		r.restarted("replay shows other batches than were published", held)
		republishFrom = nil
		frames, err = r.rep.fetch(ctx, 0)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.st.replayFailures.Add(1)
		r.log.Warn("replay failed", "from_seq", from, "err", err)
		frames = nil
	}
	for _, f := range frames {
		if !r.haveReplayHigh || f.seq > r.replayHigh {
			r.haveReplayHigh, r.replayHigh = true, f.seq
		}
		if r.haveNext && f.seq < r.next {
			if republishFrom != nil && f.seq >= *republishFrom {
				if _, err := r.publish(ctx, f); err != nil {
					return err
				}
			}
			continue
		}
		want := r.next
		missing, err := r.advance(ctx, f, true)
		if err != nil {
			return err
		}
		if missing > 0 {
			r.log.Warn("replay lacks batches (the engine no longer buffers them); they are lost",
				"from_seq", want, "to_seq", f.seq-1, "lost", missing)
		}
	}
	if held == nil {
		return nil
	}
	if r.haveNext && held.seq < r.next {
		r.st.duplicates.Add(1) // the replay brought it
		return nil
	}
	want := r.next
	missing, err := r.advance(ctx, *held, false)
	if missing > 0 {
		r.log.Warn("gap in the engine's seq not filled by replay; these batches are lost",
			"from_seq", want, "to_seq", held.seq-1, "lost", missing)
	}
	return err
}

// sameIncarnation checks replayed frames below r.next against what was
// published under their seqs. An engine that holds nothing from the asked
// seq on has gone back in seq: it restarted.
func (r *run) sameIncarnation(frames []batch) bool {
	if len(frames) == 0 {
		return false
	}
	for _, f := range frames {
		if f.seq >= r.next {
			break
		}
		if same, known := r.seen.match(f); known && !same {
			return false
		}
	}
	return true
}

// restarted begins a new epoch for a new engine incarnation whose first
// seq is 0. live, if not nil, is the live batch being handled.
func (r *run) restarted(reason string, live *batch) {
	r.st.restarts.Add(1)
	old := r.epoch
	r.newEpoch()
	r.haveNext, r.next = true, 0
	r.haveLive = live != nil
	if live != nil {
		r.lastLive = live.seq
	}
	r.haveReplayHigh = false
	r.seen.reset()
	r.log.Info("engine restarted; new epoch", "reason", reason, "old_epoch", old, "epoch", r.epoch)
}

func (r *run) newEpoch() {
	r.epoch = max(uint64(time.Now().UnixMilli()), r.epoch+1)
}
