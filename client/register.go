package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultRegisterInterval is how often Register refreshes a record.
const DefaultRegisterInterval = 10 * time.Second

// MinRegisterInterval is the shortest interval Register takes: the
// server counts record TTLs in whole seconds, at least one.
const MinRegisterInterval = 500 * time.Millisecond

// TTLIntervals is how many intervals a record outlives its last refresh:
// a worker whose record was not refreshed within them counts as gone.
const TTLIntervals = 3

// RecordFunc returns the worker's current record. Register calls it
// before every refresh, so a worker that restarted with a new layout
// replaces its record; an error skips the refresh (the record expires
// if the worker stays unreachable for TTLIntervals intervals).
type RecordFunc func(ctx context.Context) (schemas.WorkerRecord, error)

// RegisterOption configures Register.
type RegisterOption func(*registerOptions) error

type registerOptions struct {
	interval   time.Duration
	bucket     string
	log        *slog.Logger
	keepOnExit bool
	onRefresh  func(schemas.WorkerRecord)
	via        *nats.Conn // register_via.go
	viaPrefix  string
	staleMax   time.Duration
}

// WithInterval sets the refresh interval (default
// DefaultRegisterInterval, at least MinRegisterInterval).
func WithInterval(d time.Duration) RegisterOption {
	return func(o *registerOptions) error {
		if d < MinRegisterInterval {
			return fmt.Errorf("%w: interval %v, want at least %v", ErrInvalidOption, d, MinRegisterInterval)
		}
		o.interval = d
		return nil
	}
}

// WithBucket names the registry bucket (default registry.DefaultBucket).
func WithBucket(name string) RegisterOption {
	return func(o *registerOptions) error { o.bucket = name; return nil }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) RegisterOption {
	return func(o *registerOptions) error {
		if l != nil {
			o.log = l
		}
		return nil
	}
}

// WithKeepOnExit leaves the record in place when ctx ends (default: it is
// deleted, the worker is leaving); it then expires on its own.
func WithKeepOnExit(keep bool) RegisterOption {
	return func(o *registerOptions) error { o.keepOnExit = keep; return nil }
}

// WithOnRefresh calls f after every successful refresh (tests, logs).
func WithOnRefresh(f func(schemas.WorkerRecord)) RegisterOption {
	return func(o *registerOptions) error { o.onRefresh = f; return nil }
}

// Register keeps the worker's record alive in the registry bucket until
// ctx ends: every interval it calls rec and stores the record with a TTL
// of TTLIntervals intervals, so the server removes a record whose
// sidecar died and hintstream's registry watch sees it leave (the worker
// leaves the choice and its hint sender closes). When ctx ends it deletes
// the record (see WithKeepOnExit) and returns nil.
//
// On a bucket made without per-key TTL (registry.ErrNoKeyTTL) it logs a
// warning and stores records without one: they then stay until deleted.
// It returns early only for a bad option or a bucket it cannot open.
func Register(ctx context.Context, js jetstream.JetStream, rec RecordFunc, opts ...RegisterOption) error {
	o := registerOptions{interval: DefaultRegisterInterval, log: slog.Default(), staleMax: DefaultStaleMax}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return err
		}
	}
	if o.via != nil {
		r := refresher{js: js, rec: rec, o: o}
		return r.loop(ctx)
	}
	kv, err := registry.Bucket(ctx, js, o.bucket)
	if err != nil {
		return err
	}
	ttlOK, err := registry.SupportsTTL(ctx, kv)
	if err != nil {
		return err
	}
	if !ttlOK {
		o.log.Warn("registry bucket has no per-key TTL: a dead worker's record stays until deleted",
			"bucket", kv.Bucket())
	}
	r := refresher{js: js, kv: kv, rec: rec, o: o, ttl: ttlOK}
	return r.loop(ctx)
}

func (r *refresher) loop(ctx context.Context) error {
	t := time.NewTicker(r.o.interval)
	defer t.Stop()
	for {
		r.refresh(ctx)
		select {
		case <-ctx.Done():
			r.leave()
			return nil
		case <-t.C:
		}
	}
}

// refresher is Register's state between refreshes.
type refresher struct {
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	rec  RecordFunc
	o    registerOptions
	ttl  bool
	last *schemas.WorkerRecord // the record stored last
	// good is when rec last succeeded: while it fails, the last record
	// is stored again until staleMax after it.
	good time.Time
}

func (r *refresher) refresh(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, r.o.interval)
	defer cancel()
	rec, err := r.rec(cctx)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if r.last == nil || r.o.staleMax == 0 || time.Since(r.good) > r.o.staleMax {
			r.o.log.Warn("worker record unavailable; not refreshed", "err", err)
			return
		}
		// The engine's API failed, not (yet) the worker: keep its record,
		// and with it the index of what its cache holds.
		r.o.log.Warn("worker record unavailable; the last one refreshed", "err", err, "since", time.Since(r.good).Round(time.Second))
		rec = *r.last
	} else {
		r.good = time.Now()
	}
	log := r.o.log.With("worker_id", rec.WorkerID)
	if r.last != nil && r.last.WorkerID != rec.WorkerID {
		// The worker took another id: its old record must not linger.
		_ = r.remove(cctx, r.last.WorkerID)
	}
	err = r.store(cctx, rec)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("worker record not refreshed", "err", err)
		}
		return
	}
	if r.last == nil || !reflect.DeepEqual(*r.last, rec) {
		log.Info("worker record stored", "model", rec.Model, "endpoints", len(rec.HintEndpoints),
			"layout", rec.ObjectLayout != nil)
	}
	r.last = &rec
	if r.o.onRefresh != nil {
		r.o.onRefresh(rec)
	}
}

// leave deletes the record at a graceful stop, with a context of its own
// (ctx is already done).
func (r *refresher) leave() {
	if r.last == nil || r.o.keepOnExit {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.remove(ctx, r.last.WorkerID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		r.o.log.Warn("worker record not deleted at exit", "worker_id", r.last.WorkerID, "err", err)
	}
}
