package client

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Batched affinity writes. A kv.Put per wake-up is a
// synchronous JetStream publish: one write to the socket and one
// reply waited for, on top of the wake-up's own ack; at 2,000 wake-ups/s
// it was about a sixth of hintstream's CPU over the floor's. With
// AffinityAsync the writer lingers briefly for more records and
// publishes the batch in one flush, only its last record with a reply
// subject: JetStream stores one connection's messages to one stream in
// the order they arrive (nats-server processes a client's inbound
// messages in order, and a stream's in the order queued), so the last
// record's acknowledgement follows every earlier one's store, and the
// counters still mean "stored". What this gives up: a record the stream
// rejected by itself while its batch's last was stored would be
// counted written; records are fixed-form JSON under the bucket's own
// limits with no expected-sequence header, so no such rejection is
// known. A per-record ack was, again, a sixth of the remaining
// overhead (PubAck parsing and futures, the server's replies).
const (
	// DefaultAffinityLinger is how long the writer waits for more records
	// after the first of a batch. A record is read at the session's next
	// turn, seconds later: milliseconds do not matter to it, and a batch
	// costs far more than a record (a publish with a reply, its PubAck
	// parsed, a timer, two goroutine wake-ups). At 2 ms, batches of about
	// 4 records at 2,000 wake-ups/s, the records cost hintstream 0.18×
	// the floor's CPU per wake-up; at 10 ms (about 20) 0.07× (measured with
	// BenchmarkPairAB, 3 rounds, CPU per wake-up against the floor beside
	// it 1.18–1.19 → 1.06–1.08). (Longer is not free: the value runs wait
	// for each wake-up's record before the next event, so every wake-up
	// of a trace adds the linger to its run.)
	DefaultAffinityLinger = 10 * time.Millisecond
	// DefaultAffinityBatch bounds the records of one batch.
	DefaultAffinityBatch = 64
	// affinityAckWait bounds the wait for one batch's acknowledgement.
	affinityAckWait = 2 * time.Second
)

// WriterOption configures NewAffinityWriter.
type WriterOption func(*AffinityWriter)

// AffinityAsync writes through js's asynchronous publish to the
// bucket's subjects ($KV.<bucket>.<key>) instead of kv.Put. js must be
// the JetStream the bucket was opened with, without a domain or API
// prefix, and the bucket not a mirror (kv.Put would then write elsewhere;
// use the default path).
func AffinityAsync(js jetstream.JetStream) WriterOption {
	return func(w *AffinityWriter) { w.js = js }
}

// runBatched is run with AffinityAsync.
func (w *AffinityWriter) runBatched() {
	prefix := "$KV." + w.kv.Bucket() + "."
	batch := make([]affinityPut, 0, DefaultAffinityBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var last time.Time // when the last batch left
	for p := range w.queue {
		// The linger is slept through, not spent waiting on the queue:
		// a writer waiting on it is woken by every record, two goroutine
		// switches per wake-up; this way a batch costs two (its first
		// record and the timer), whatever its size. Records sent meanwhile
		// wait in the queue, which holds many batches. A writer idle for
		// a linger or more publishes at once: its record may be wanted by
		// a turn milliseconds away, and at that rate batches save nothing.
		batch = append(batch[:0], p)
		if time.Since(last) < DefaultAffinityLinger {
			linger.Reset(DefaultAffinityLinger)
			<-linger.C
		}
	gather:
		for len(batch) < DefaultAffinityBatch {
			select {
			case p, ok := <-w.queue:
				if !ok {
					break gather
				}
				batch = append(batch, p)
			default:
				break gather
			}
		}
		kept := batch[:0]
		for i := range batch {
			if w.state.prepare(&batch[i]) {
				kept = append(kept, batch[i])
			}
		}
		clear(batch[len(kept):])
		batch = kept
		last = time.Now()
		if len(batch) > 0 {
			w.awaitBatch(w.publishBatch(prefix, batch))
		}
		clear(batch)
	}
}

// publishBatch publishes batch in order, all but the last record
// without a reply subject. It returns the last one's future and how
// many records its acknowledgement confirms (none, and no future, when
// the last could not be published: the records before it are then
// counted dropped, having nothing to confirm them).
func (w *AffinityWriter) publishBatch(prefix string, batch []affinityPut) (jetstream.PubAckFuture, int) {
	nc := w.js.Conn()
	unconfirmed := 0
	for i, p := range batch {
		if w.ctx.Err() != nil {
			w.counts.AffinityDropped("closed", uint64(len(batch)-i+unconfirmed))
			return nil, 0
		}
		subject, data := prefix+p.key, p.rec.Encode()
		if i < len(batch)-1 {
			if err := nc.Publish(subject, data); err != nil {
				w.counts.AffinityDropped("error", 1)
				w.log.Debug("affinity record not written", "worker_id", p.rec.WorkerID, "dp_rank", p.rec.DpRank, "err", err)
				continue
			}
			unconfirmed++
			continue
		}
		f, err := w.js.PublishAsync(subject, data)
		if err != nil {
			w.counts.AffinityDropped("error", uint64(1+unconfirmed))
			w.log.Debug("affinity records not written", "records", 1+unconfirmed, "err", err)
			return nil, 0
		}
		return f, 1 + unconfirmed
	}
	return nil, 0
}

// awaitBatch counts the n records f confirms once it is acknowledged,
// failed, timed out (affinityAckWait) or cut short by the grace after Run.
func (w *AffinityWriter) awaitBatch(f jetstream.PubAckFuture, n int) {
	if f == nil {
		return
	}
	deadline := time.NewTimer(affinityAckWait)
	defer deadline.Stop()
	select {
	case <-f.Ok():
		w.counts.AffinityWritten(uint64(n))
	case err := <-f.Err():
		w.counts.AffinityDropped("error", uint64(n))
		w.log.Debug("affinity records not written", "records", n, "err", err)
	case <-deadline.C:
		w.counts.AffinityDropped("error", uint64(n))
	case <-w.ctx.Done():
		w.counts.AffinityDropped("closed", uint64(n))
	}
}
