package client

import (
	"context"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go"
)

// WithVia makes Register ask a hintstream member to store the record
// (registry.Writer, on prefix.<worker id>; "" for
// registry.DefaultRegisterPrefix) instead of writing the bucket: a
// worker user then needs no right on the bucket, whose roll-up header
// could wipe every record.
func WithVia(nc *nats.Conn, prefix string) RegisterOption {
	return func(o *registerOptions) error {
		if nc == nil {
			return fmt.Errorf("%w: WithVia: nil connection", ErrInvalidOption)
		}
		o.via, o.viaPrefix = nc, prefix
		return nil
	}
}

// WithStaleMax keeps storing the last record read while rec fails (an
// engine API that hangs or answers nonsense), for at most d after the
// last good read (default DefaultStaleMax; 0: never): the worker's
// cache outlives its API's hiccups, and its index should too.
func WithStaleMax(d time.Duration) RegisterOption {
	return func(o *registerOptions) error {
		if d < 0 {
			return fmt.Errorf("%w: WithStaleMax %v is negative", ErrInvalidOption, d)
		}
		o.staleMax = d
		return nil
	}
}

// DefaultStaleMax is how long Register keeps the last good record while
// the engine's API fails.
const DefaultStaleMax = 5 * time.Minute

// store writes rec with a TTL (when the bucket takes one), directly or
// through a Writer.
func (r *refresher) store(ctx context.Context, rec schemas.WorkerRecord) error {
	ttl := TTLIntervals * r.o.interval
	switch {
	case r.o.via != nil:
		return registry.Ask(ctx, r.o.via, r.o.viaPrefix, rec.WorkerID, &rec, ttl)
	case r.ttl:
		return registry.PutTTL(ctx, r.js, r.kv, rec, ttl)
	}
	return registry.Put(ctx, r.kv, rec)
}

// remove deletes worker id's record, directly or through a Writer.
func (r *refresher) remove(ctx context.Context, id uint64) error {
	if r.o.via != nil {
		return registry.Ask(ctx, r.o.via, r.o.viaPrefix, id, nil, 0)
	}
	return r.kv.Delete(ctx, registry.Key(id))
}
