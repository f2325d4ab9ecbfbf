package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultAffinityWait is how long AwaitPreferred waits for a wake-up's
// record by default: hintstream's writer lingers up to 10 ms while
// records keep coming (DefaultAffinityLinger), plus a
// decision and a KV round trip.
const DefaultAffinityWait = 25 * time.Millisecond

// WithAffinityRegistry makes PreferredWorker and PreferredWorkerFor
// answer only with a worker registered in kv (hintstream's worker
// registry, key = worker id in decimal): a worker that left gives
// ErrNoPreference. OpenAffinity attaches the default registry bucket
// when it exists.
func WithAffinityRegistry(kv jetstream.KeyValue) AffinityOption {
	return func(a *Affinity) { a.workers = kv }
}

// registered reports whether id is in the registry (true when no
// registry is attached).
func (a *Affinity) registered(ctx context.Context, id uint64) (bool, error) {
	if a.workers == nil {
		return true, nil
	}
	_, err := a.workers.Get(ctx, strconv.FormatUint(id, 10))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("client: registry of worker %d: %w", id, err)
	}
	return true, nil
}

// attachRegistry is OpenAffinity's: the default registry, when present.
func attachRegistry(ctx context.Context, js jetstream.JetStream) jetstream.KeyValue {
	kv, err := js.KeyValue(ctx, registry.DefaultBucket)
	if err != nil {
		return nil
	}
	return kv
}

// PreferredWorkerFor returns where the prefetch of session's wake-up
// requestID went, while it is unexpired and its worker registered: the
// record itself or one of its Recent entries (a session whose turns
// overlap, or that forked, keeps its earlier wake-ups there). No such
// wake-up gives ErrNoPreference; other errors as PreferredWorker's.
func (a *Affinity) PreferredWorkerFor(ctx context.Context, session, requestID string) (Preferred, error) {
	key := schemas.AffinityKey(session)
	if key == "" || requestID == "" {
		return Preferred{}, ErrNoPreference
	}
	e, err := a.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Preferred{}, ErrNoPreference
	}
	if err != nil {
		return Preferred{}, fmt.Errorf("client: affinity of session: %w", err)
	}
	return a.pick(ctx, e.Value(), requestID)
}

// pick finds requestID's entry in an encoded record.
func (a *Affinity) pick(ctx context.Context, value []byte, requestID string) (Preferred, error) {
	rec, err := schemas.DecodeAffinityRecord(value)
	if err != nil {
		return Preferred{}, err
	}
	var p Preferred
	switch {
	case rec.RequestID == requestID:
		p = Preferred{WorkerID: rec.WorkerID, DpRank: rec.DpRank, ExpiresAt: time.UnixMilli(rec.ExpiresAtMs), RequestID: rec.RequestID}
	default:
		for _, r := range rec.Recent {
			if r.RequestID == requestID {
				p = Preferred{WorkerID: r.WorkerID, DpRank: r.DpRank, ExpiresAt: time.UnixMilli(r.ExpiresAtMs), RequestID: r.RequestID}
				break
			}
		}
	}
	if p.WorkerID == 0 || !a.now().Before(p.ExpiresAt) {
		return Preferred{}, ErrNoPreference
	}
	if ok, err := a.registered(ctx, p.WorkerID); err != nil || !ok {
		if err == nil {
			err = ErrNoPreference
		}
		return Preferred{}, err
	}
	return p, nil
}

// AwaitPreferred is PreferredWorkerFor for a turn that may follow its
// wake-up by less than the time hintstream takes to record it: it
// watches the session's key for up to wait (0: DefaultAffinityWait) for
// the record of requestID, then gives ErrNoPreference. A frontend that
// knows the turn's wake-up calls this; one that does not calls
// PreferredWorker.
func (a *Affinity) AwaitPreferred(ctx context.Context, session, requestID string, wait time.Duration) (Preferred, error) {
	key := schemas.AffinityKey(session)
	if key == "" || requestID == "" {
		return Preferred{}, ErrNoPreference
	}
	if wait <= 0 {
		wait = DefaultAffinityWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	wt, err := a.kv.Watch(ctx, key)
	if err != nil {
		return Preferred{}, fmt.Errorf("client: watch affinity of session: %w", err)
	}
	defer func() { _ = wt.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return Preferred{}, ErrNoPreference
		case e, ok := <-wt.Updates():
			if !ok {
				return Preferred{}, ErrNoPreference
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // nil: the current value has been given
			}
			p, err := a.pick(ctx, e.Value(), requestID)
			if errors.Is(err, ErrNoPreference) {
				continue
			}
			return p, err
		}
	}
}
