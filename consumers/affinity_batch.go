package consumers

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Batched affinity writes (issue 17). A kv.Put per wake-up is a
// synchronous JetStream publish: one write to the socket and one
// reply waited for, on top of the wake-up's own ack; at 2,000 wake-ups/s
// it was about a sixth of hintstream's CPU over the floor's. With
// AffinityAsync the writer lingers briefly for more records, publishes
// the batch asynchronously (the client flushes it in one write) and
// then waits for its acknowledgements, so the counters still mean
// "stored".
const (
	// DefaultAffinityLinger is how long the writer waits for more records
	// after the first of a batch. A record is read at the session's next
	// turn, seconds later: milliseconds do not matter to it.
	DefaultAffinityLinger = 2 * time.Millisecond
	// DefaultAffinityBatch bounds the records of one batch.
	DefaultAffinityBatch = 64
	// affinityAckWait bounds the wait for one batch's acknowledgements.
	affinityAckWait = 2 * time.Second
)

// AffinityOption configures NewAffinityWriter.
type AffinityOption func(*AffinityWriter)

// AffinityAsync writes through js's asynchronous publish to the
// bucket's subjects ($KV.<bucket>.<key>) instead of kv.Put. js must be
// the JetStream the bucket was opened with, without a domain or API
// prefix, and the bucket not a mirror (kv.Put would then write elsewhere;
// use the default path).
func AffinityAsync(js jetstream.JetStream) AffinityOption {
	return func(w *AffinityWriter) { w.js = js }
}

// runBatched is run with AffinityAsync.
func (w *AffinityWriter) runBatched() {
	defer w.wg.Done()
	prefix := "$KV." + w.kv.Bucket() + "."
	batch := make([]affinityPut, 0, DefaultAffinityBatch)
	futs := make([]jetstream.PubAckFuture, 0, DefaultAffinityBatch)
	for p := range w.queue {
		batch = append(batch[:0], p)
		linger := time.NewTimer(DefaultAffinityLinger)
	gather:
		for len(batch) < DefaultAffinityBatch {
			select {
			case p, ok := <-w.queue:
				if !ok {
					break gather
				}
				batch = append(batch, p)
			case <-linger.C:
				break gather
			}
		}
		linger.Stop()
		futs = w.publishBatch(prefix, batch, futs[:0])
		w.awaitBatch(futs)
	}
}

func (w *AffinityWriter) publishBatch(prefix string, batch []affinityPut, futs []jetstream.PubAckFuture) []jetstream.PubAckFuture {
	for _, p := range batch {
		if w.ctx.Err() != nil {
			w.counters.AffinityDropped.Inc("closed")
			continue
		}
		f, err := w.js.PublishAsync(prefix+p.key, p.rec.Encode())
		if err != nil {
			w.counters.AffinityDropped.Inc("error")
			w.log.Debug("affinity record not written", "worker_id", p.rec.WorkerID, "dp_rank", p.rec.DpRank, "err", err)
			continue
		}
		futs = append(futs, f)
	}
	return futs
}

// awaitBatch counts each publish once acknowledged, failed, timed out
// (affinityAckWait for the batch) or cut short by Close's grace.
func (w *AffinityWriter) awaitBatch(futs []jetstream.PubAckFuture) {
	if len(futs) == 0 {
		return
	}
	deadline := time.NewTimer(affinityAckWait)
	defer deadline.Stop()
	for i, f := range futs {
		select {
		case <-f.Ok():
			w.counters.AffinityWritten.Inc()
		case err := <-f.Err():
			w.counters.AffinityDropped.Inc("error")
			w.log.Debug("affinity record not written", "err", err)
		case <-deadline.C:
			w.dropRest("error", len(futs)-i)
			return
		case <-w.ctx.Done():
			w.dropRest("closed", len(futs)-i)
			return
		}
	}
}

func (w *AffinityWriter) dropRest(reason string, n int) {
	w.counters.AffinityDropped.Add(reason, uint64(n))
}
