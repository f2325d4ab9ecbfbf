package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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

// AffinityCounts takes the writer's counts: records written, records
// skipped (reason no_session: an empty or over-long session id) and
// records dropped (queue_full, error, or closed: still queued when the
// grace after Run's context ended ran out). The service passes its
// metrics; nil counts nothing. Calls come from any goroutine.
type AffinityCounts interface {
	AffinityWritten(n uint64)
	AffinitySkipped(reason string)
	AffinityDropped(reason string, n uint64)
}

type noCounts struct{}

func (noCounts) AffinityWritten(uint64)         {}
func (noCounts) AffinitySkipped(string)         {}
func (noCounts) AffinityDropped(string, uint64) {}

// AffinityWriter writes the affinity records a wake-up's prefetch leaves
// (the records PreferredWorker reads) to a JetStream KV bucket, from the
// one goroutine of Run, off the consumer's path.
type AffinityWriter struct {
	kv      jetstream.KeyValue
	counts  AffinityCounts
	log     *slog.Logger
	queue   chan affinityPut
	ctx     context.Context // Run's; cancelled affinityCloseGrace after Run's context ends
	running sync.Once
	mu      sync.RWMutex // closed and sends on queue
	closed  bool
	js      jetstream.JetStream // AffinityAsync: batched asynchronous writes
	state   *affinityState      // Run's goroutine's (affinity_recent.go)
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

// NewAffinityWriter makes a writer to kv; Run writes. Records given before
// Run starts wait in its queue (DefaultAffinityQueue). By default each
// record is one kv.Put; AffinityAsync batches them (affinity_batch.go).
// counts may be nil, log nil for slog.Default().
func NewAffinityWriter(kv jetstream.KeyValue, counts AffinityCounts, log *slog.Logger, opts ...WriterOption) *AffinityWriter {
	if log == nil {
		log = slog.Default()
	}
	if counts == nil {
		counts = noCounts{}
	}
	w := &AffinityWriter{kv: kv, counts: counts, log: log.With("bucket", kv.Bucket()),
		queue: make(chan affinityPut, DefaultAffinityQueue), state: newAffinityState(DefaultAffinitySessions)}
	for _, o := range opts {
		o(w)
	}
	return w
}

// ErrAlreadyRunning: Run was called a second time.
var ErrAlreadyRunning = errors.New("client: affinity writer already ran")

// Run writes queued records until ctx ends. Then it takes no more
// records (dropped, counted closed), writes what is queued within a short
// grace (half a second: records are worth seconds, and a shutdown with
// the bus down must not wait for every put to time out), counts the rest
// dropped, and returns nil. A writer runs once.
func (w *AffinityWriter) Run(ctx context.Context) error {
	first := false
	w.running.Do(func() { first = true })
	if !first {
		return ErrAlreadyRunning
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	w.ctx = wctx
	var grace *time.Timer
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
		grace = time.AfterFunc(affinityCloseGrace, cancel)
		close(w.queue)
	})
	defer func() {
		if !stop() {
			// Started: the queue was closed after grace was set, under mu.
			w.mu.Lock()
			grace.Stop()
			w.mu.Unlock()
		}
	}()
	if w.js != nil {
		w.runBatched()
	} else {
		w.run()
	}
	return nil
}

// RecordAffinity implements engine.AffinityRecorder: it queues the record and
// returns at once.
func (w *AffinityWriter) RecordAffinity(session string, rec schemas.AffinityRecord) {
	key := schemas.AffinityKey(session)
	if key == "" {
		w.counts.AffinitySkipped("no_session")
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.counts.AffinityDropped("closed", 1)
		return
	}
	select {
	case w.queue <- affinityPut{key: key, rec: rec}:
	default:
		w.counts.AffinityDropped("queue_full", 1)
	}
}

func (w *AffinityWriter) run() {
	for p := range w.queue {
		if w.ctx.Err() != nil {
			w.counts.AffinityDropped("closed", 1)
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
			w.counts.AffinityDropped("closed", 1)
			continue
		}
		if err != nil {
			w.counts.AffinityDropped("error", 1)
			w.log.Debug("affinity record not written", "worker_id", p.rec.WorkerID, "dp_rank", p.rec.DpRank, "err", err)
			continue
		}
		w.counts.AffinityWritten(1)
	}
}
