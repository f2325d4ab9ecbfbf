package replay

import (
	"context"
	"errors"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// source is one stream read in order, with a small lookahead so sources
// can be merged by time.
type source struct {
	kind string
	cons jetstream.Consumer
	last uint64 // the stream's last sequence for our subjects when the replay began
	buf  []jetstream.Msg
	done bool
}

// openSource opens an ordered consumer on a stream: state streams from
// their start, trigger streams from Since or FromSeq. It returns nil for
// a stream with nothing to replay.
func openSource(ctx context.Context, js jetstream.JetStream, kind string, cfg streams.Config, trigger bool, o Options) (*source, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var last uint64
	for _, subj := range cfg.Subjects {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		last = max(last, m.Sequence)
	}
	if last == 0 {
		return nil, nil
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: cfg.Subjects, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case trigger && kind == "requests" && o.FromSeq > 0:
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.FromSeq
	case trigger && o.FromSeq > 0:
		// Responses start at the time of the request they follow.
		rs, err := js.Stream(ctx, o.Streams.Requests.Name)
		if err != nil {
			return nil, err
		}
		m, err := rs.GetMsg(ctx, o.FromSeq)
		if err != nil {
			return nil, err
		}
		t := m.Time
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	case trigger && !o.Since.IsZero():
		t := o.Since
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, cfg.Name, occ)
	if err != nil {
		return nil, err
	}
	return &source{kind: kind, cons: cons, last: last}, nil
}

// peek returns the next message without taking it, nil at the end.
func (s *source) peek(ctx context.Context) (jetstream.Msg, error) {
	if s.done {
		return nil, nil
	}
	if len(s.buf) == 0 {
		batch, err := s.cons.Fetch(256, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			s.buf = append(s.buf, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if len(s.buf) == 0 {
			// Nothing more before the replay began (a trigger stream that
			// starts after its last message, or a drained one).
			s.done = true
			return nil, nil
		}
	}
	return s.buf[0], ctx.Err()
}

// pop takes the message peek returned; the source ends after the last
// message that existed when the replay began.
func (s *source) pop() jetstream.Msg {
	m := s.buf[0]
	s.buf = s.buf[1:]
	if md, err := m.Metadata(); err == nil && md.Sequence.Stream >= s.last {
		s.done = true
	}
	return m
}

// earliest returns the source whose next message is the oldest (state
// before triggers at equal times, so a request sees the events published
// with it), nil when all are done.
func earliest(ctx context.Context, srcs []*source) (*source, error) {
	var best *source
	var bestT time.Time
	for _, s := range srcs {
		m, err := s.peek(ctx)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		if best == nil || md.Timestamp.Before(bestT) {
			best, bestT = s, md.Timestamp
		}
	}
	return best, nil
}
