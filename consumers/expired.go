package consumers

import (
	"github.com/nats-io/nats.go/jetstream"
)

// Requests and responses that expire unread. The trigger streams keep a
// message for its max age only; while no member runs (or all are far
// behind), a wake-up or tool-call response can age out before the durable
// hands it to anyone, and JetStream skips it without a word: the
// durable's ack floor simply sits behind the stream's first sequence.
// Each time a member attaches to the durable, it compares the two, and
// counts and logs the range once ({requests,responses}.expired_unread).
// The count is an upper bound: a message above the ack floor may have
// been acked out of order, and with --models a filtered durable's range
// also holds other models' messages.

// checkExpired reports the messages between the durable's ack floor and
// the stream's first sequence (stream info st, consumer info ci).
func (d *durable) checkExpired(st *jetstream.StreamInfo, ci *jetstream.ConsumerInfo) {
	if st == nil || ci == nil {
		return
	}
	first := st.State.FirstSeq
	from := max(ci.AckFloor.Stream+1, d.expiredTo.Load()+1)
	if first <= from {
		return
	}
	to := first - 1
	d.expiredTo.Store(to)
	n := to - from + 1
	d.counters.Trigger(d.dlqKind).ExpiredUnread.Add(n)
	d.log.Warn("messages expired from the stream before any member handled them", "stream", d.stream,
		"durable", d.name, "from_seq", from, "to_seq", to, "missing", n, "ack_floor", ci.AckFloor.Stream)
}
