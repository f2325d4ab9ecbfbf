// Package registry keeps a live view of the worker registry: a JetStream
// KV bucket whose keys are worker ids in decimal and whose values are
// schemas.WorkerRecord JSON, written by the workers or their operator.
package registry

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"errors"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// ChangeKind says how a worker's record changed. The zero value is no
// change.
type ChangeKind int

const (
	Added   ChangeKind = iota + 1 // a valid record appeared for a new worker
	Updated                       // a worker's valid record was replaced by a different one
	Deleted                       // a worker's record was deleted, purged or replaced by an invalid one
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Deleted:
		return "deleted"
	}
	return "none"
}

// Change is one worker's transition, as seen by the registry. Record is
// nil for Deleted, Previous nil for Added. Both are shared with the
// registry: read them, never modify them.
type Change struct {
	Kind     ChangeKind
	WorkerID uint64
	Record   *schemas.WorkerRecord
	Previous *schemas.WorkerRecord
}

// Option configures Open.
type Option func(*options)

type options struct {
	bucket   string
	log      *slog.Logger
	onChange func(Change)
	check    recordCheck // validate.go
}

// WithBucket sets the bucket name; default DefaultBucket.
func WithBucket(name string) Option { return func(o *options) { o.bucket = name } }

// WithLogger sets the logger; default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithOnChange registers f to be called for every change, in order, from
// the watcher goroutine (initial records included, as Added). f must not
// block long (it delays every later update).
func WithOnChange(f func(Change)) Option { return func(o *options) { o.onChange = f } }

// Registry is a live, in-memory view of the worker registry bucket.
// Entries with a key that is not a canonical decimal uint64, a value that
// schemas.Limits{}.DecodeWorkerRecordWith rejects under WithEndpointRules,
// or a worker_id other than the key are logged, counted in Invalid (and by
// reason through WithOnInvalid) and treated as absent.
type Registry struct {
	kv       jetstream.KeyValue
	bucket   string
	log      *slog.Logger
	onChange func(Change)
	check    recordCheck // validate.go

	mu      sync.RWMutex
	records map[uint64]entry
	claims  map[string]uint64 // hint endpoint → the worker listing it (claims.go)
	models  *modelView        // records by model, for WorkersFor (models.go)
	invalid atomic.Uint64
	// rewatches counts watchers re-created after an unexpected close.
	rewatches atomic.Uint64

	// rejected maps a rejected key to the revision rejected, so a replay
	// of the same revision is neither logged nor counted twice. Owned by
	// the watcher goroutine.
	rejected map[string]uint64

	ready     chan struct{}
	readyOnce sync.Once
	ctx       context.Context // cancelled when Run's context ends; bounds re-watching
	cancel    context.CancelFunc
	stop      chan struct{} // closed when Run's context ends
	stopOnce  sync.Once
	first     watch // the watch Open made, consumed by Run
	running   atomic.Bool

	wmu     sync.Mutex
	watcher jetstream.KeyWatcher // current one, for tests
}

type entry struct {
	rev uint64
	rec *schemas.WorkerRecord
}

// Open attaches to the registry bucket (creating it when absent, see
// Bucket) and subscribes to its updates, so that a bucket or a watch it
// cannot have fails here. ctx bounds Open only. Run then keeps the view;
// records are visible once Ready is closed. A Registry that is never run
// keeps its subscription until its connection closes.
func Open(ctx context.Context, js jetstream.JetStream, opts ...Option) (*Registry, error) {
	o := options{bucket: DefaultBucket}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.bucket == "" {
		o.bucket = DefaultBucket
	}
	kv, err := Bucket(ctx, js, o.bucket)
	if err != nil {
		return nil, err
	}
	r := &Registry{
		kv:       kv,
		bucket:   o.bucket,
		log:      o.log.With("bucket", o.bucket),
		onChange: o.onChange,
		check:    o.check,
		records:  make(map[uint64]entry),
		claims:   make(map[string]uint64),
		models:   newModelView(),
		rejected: make(map[string]uint64),
		ready:    make(chan struct{}),
		stop:     make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	cur, err := r.newWatch(ctx)
	if err != nil {
		r.cancel()
		return nil, err
	}
	r.watcher = cur.w
	r.first = cur
	return r, nil
}

// Ready is closed once the bucket's values at Open time are loaded.
func (r *Registry) Ready() <-chan struct{} { return r.ready }

// Get returns worker id's record. Its slices are shared: do not modify.
func (r *Registry) Get(id uint64) (schemas.WorkerRecord, bool) {
	r.mu.RLock()
	e, ok := r.records[id]
	r.mu.RUnlock()
	if !ok {
		return schemas.WorkerRecord{}, false
	}
	return *e.rec, true
}

// Workers returns every valid record, sorted by worker id. Their slices
// are shared: do not modify.
func (r *Registry) Workers() []schemas.WorkerRecord {
	r.mu.RLock()
	out := make([]schemas.WorkerRecord, 0, len(r.records))
	for _, e := range r.records {
		out = append(out, *e.rec)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b schemas.WorkerRecord) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	return out
}

// Invalid counts the entry revisions rejected since Open.
func (r *Registry) Invalid() uint64 { return r.invalid.Load() }

// ErrAlreadyRunning: Run was called a second time.
var ErrAlreadyRunning = errors.New("registry: already running")

// Run keeps the view in step with the bucket until ctx ends, then stops
// watching and returns nil; the view keeps its last state. A watch that
// ends unexpectedly (a lost subscription, a server restart) is made again
// with backoff rather than given up, so Run has no error of its own
// beyond ErrAlreadyRunning: a Registry runs once.
func (r *Registry) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	stop := context.AfterFunc(ctx, func() {
		r.stopOnce.Do(func() {
			close(r.stop)
			r.cancel()
		})
	})
	defer stop()
	r.run(r.first)
	return nil
}
