package consumers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the affinity bucket.
const (
	// DefaultAffinityMaxAge is how long the bucket keeps an entry. A record
	// is useful only until its expires_at_ms (the prefetch TTL, 2 s by
	// default); the age only bounds the bucket: at 2,000 wake-ups/s of
	// distinct sessions it holds about 120,000 entries of ~100 bytes.
	DefaultAffinityMaxAge = time.Minute
	// DefaultAffinityQueue bounds the records waiting to be written;
	// past it new ones are dropped (counted), never waited for.
	DefaultAffinityQueue = 4096
	// affinityCloseGrace is how long Close lets queued records be written
	// (records are worth seconds; a shutdown with the bus down must not
	// wait for every one's put to time out).
	affinityCloseGrace = 500 * time.Millisecond
)

// AffinityWriter writes affinity records to a JetStream KV bucket from
// one goroutine, off the consumer's path. Counters:
// affinity.written, affinity.skipped|no_session (empty or over-long
// session id), affinity.dropped|queue_full, affinity.dropped|error, and
// affinity.dropped|closed (still queued when Close's grace ran out).
type AffinityWriter struct {
	kv       jetstream.KeyValue
	counters *metrics.Families
	log      *slog.Logger
	queue    chan affinityPut
	ctx      context.Context // cancelled affinityCloseGrace after Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
	mu       sync.RWMutex // closed and sends on queue
	closed   bool
	js       jetstream.JetStream // AffinityAsync: batched asynchronous writes
	state    *affinityState      // the writer goroutine's (affinity_recent.go)
}

type affinityPut struct {
	key      string
	rec      schemas.AffinityRecord
	withdraw bool // take back the record of rec.RequestID (affinity_recent.go)
}

// OpenAffinityBucket attaches to the bucket, creating it (memory storage,
// history 1, entries kept DefaultAffinityMaxAge) when absent. It fails
// when the bucket can be neither found nor created, e.g. for lack of
// permission: turn affinity records off (--affinity-bucket "") then.
func OpenAffinityBucket(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = schemas.DefaultAffinityBucket
	}
	kv, _, err := streams.OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: bucket,
		Description: "hintstream prefetch affinity: key = base64url(session id), value = {worker_id, dp_rank, expires_at_ms} JSON",
		History:     1, TTL: DefaultAffinityMaxAge, Storage: jetstream.MemoryStorage})
	if err != nil {
		return nil, fmt.Errorf("affinity: %w", err)
	}
	return kv, nil
}

// NewAffinityWriter starts the writer; Close stops it. By default each
// record is one kv.Put; AffinityAsync batches them (affinity_batch.go).
func NewAffinityWriter(kv jetstream.KeyValue, counters *metrics.Families, log *slog.Logger, opts ...AffinityOption) *AffinityWriter {
	if log == nil {
		log = slog.Default()
	}
	w := &AffinityWriter{kv: kv, counters: counters, log: log.With("bucket", kv.Bucket()),
		queue: make(chan affinityPut, DefaultAffinityQueue), state: newAffinityState(DefaultAffinitySessions)}
	for _, o := range opts {
		o(w)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.wg.Add(1)
	if w.js != nil {
		go w.runBatched()
	} else {
		go w.run()
	}
	return w
}

// RecordAffinity implements engine.AffinityRecorder: it queues the record and
// returns at once.
func (w *AffinityWriter) RecordAffinity(session string, rec schemas.AffinityRecord) {
	key := schemas.AffinityKey(session)
	if key == "" {
		w.counters.AffinitySkipped.Inc("no_session")
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.counters.AffinityDropped.Inc("closed")
		return
	}
	select {
	case w.queue <- affinityPut{key: key, rec: rec}:
	default:
		w.counters.AffinityDropped.Inc("queue_full")
	}
}

func (w *AffinityWriter) run() {
	defer w.wg.Done()
	for p := range w.queue {
		if w.ctx.Err() != nil {
			w.counters.AffinityDropped.Inc("closed")
			continue
		}
		if !w.state.prepare(&p) {
			continue
		}
		// A record outlives its use within seconds; a slow bus must not
		// hold the queue for longer than that.
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
		_, err := w.kv.Put(ctx, p.key, p.rec.Encode())
		cancel()
		if err != nil && w.ctx.Err() != nil {
			w.counters.AffinityDropped.Inc("closed")
			continue
		}
		if err != nil {
			w.counters.AffinityDropped.Inc("error")
			w.log.Debug("affinity record not written", "worker_id", p.rec.WorkerID, "dp_rank", p.rec.DpRank, "err", err)
			continue
		}
		w.counters.AffinityWritten.Inc()
	}
}

// Close writes what is queued within a short grace (half a second),
// drops the rest (counted) and stops; safe to call twice. Records given
// after Close are dropped.
func (w *AffinityWriter) Close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.queue)
		w.mu.Unlock()
		t := time.AfterFunc(affinityCloseGrace, w.cancel)
		defer t.Stop()
		w.wg.Wait()
		w.cancel()
	})
	w.wg.Wait()
}
