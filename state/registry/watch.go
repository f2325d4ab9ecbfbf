package registry

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
)

// Re-watching starts at once and then backs off (a closed subscription
// is usually a blip), capped so a long outage costs one attempt every few
// seconds. Creating a watcher may take watchTimeout; a stopped one has
// drainTimeout to close its channel.
const (
	rewatchInitial = 100 * time.Millisecond
	rewatchMax     = 5 * time.Second
	watchTimeout   = 10 * time.Second
	drainTimeout   = 5 * time.Second
)

func newBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(rewatchInitial),
		backoff.WithMaxInterval(rewatchMax),
		backoff.WithMaxElapsedTime(0),
	)
}

// watch is a live watcher and the cancel that ends it: nats.go ties a
// watcher's life to the context it was created with, so each gets its
// own, derived from the registry's.
type watch struct {
	w      jetstream.KeyWatcher
	cancel context.CancelFunc
}

func (r *Registry) run(cur watch) {
	// flap delays re-watching when watchers keep closing before their
	// replay ends, which the per-attempt backoff of rewatch cannot see.
	flap := newBackoff()
	for {
		stopped, healthy := r.consume(cur.w)
		r.stopWatcher(cur)
		if stopped {
			return
		}
		r.log.Warn("registry watcher closed unexpectedly; re-creating it")
		if healthy {
			flap.Reset()
		} else if !r.sleep(flap.NextBackOff()) {
			return
		}
		var ok bool
		if cur, ok = r.rewatch(); !ok {
			return
		}
	}
}

// sleep waits d, or returns false once Run's context ended.
func (r *Registry) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stop:
		return false
	}
}

// newWatch creates a watcher that lives until Run ends or its cancel, giving
// up on creation after watchTimeout or when bound is done.
func (r *Registry) newWatch(bound context.Context) (watch, error) {
	ctx, cancel := context.WithCancel(r.ctx)
	timer := time.AfterFunc(watchTimeout, cancel)
	unbind := context.AfterFunc(bound, cancel)
	w, err := r.kv.WatchAll(ctx)
	inTime, unbound := timer.Stop(), unbind()
	cur := watch{w: w, cancel: cancel}
	if err == nil && (!inTime || !unbound) {
		// Created, but its context was cancelled meanwhile.
		r.stopWatcher(cur)
		err = bound.Err()
		if err == nil {
			err = r.ctx.Err()
		}
		if err == nil {
			err = fmt.Errorf("timed out after %v", watchTimeout)
		}
	}
	if err != nil {
		cancel()
		return watch{}, fmt.Errorf("registry: watch bucket %q: %w", r.bucket, err)
	}
	return cur, nil
}

// consume applies w's updates until Run ends (stopped) or until w's channel
// closes; healthy says whether w finished its replay first. Each watcher replays the current values first; keys
// known before but absent from the replay were removed while no watcher
// was running, and are dropped when the replay ends.
func (r *Registry) consume(w jetstream.KeyWatcher) (stopped, healthy bool) {
	seen := make(map[string]struct{})
	for {
		select {
		case <-r.stop:
			return true, seen == nil
		case e, ok := <-w.Updates():
			if !ok {
				return false, seen == nil
			}
			if e == nil {
				if seen != nil {
					r.resync(seen)
					seen = nil
					r.readyOnce.Do(func() { close(r.ready) })
				}
				continue
			}
			if seen != nil {
				seen[e.Key()] = struct{}{}
			}
			r.apply(e)
		}
	}
}

// stopWatcher ends cur and drains it: the library's callback blocks
// sending on the updates channel, so its goroutine only exits (and closes
// the channel) once the channel is no longer left full.
func (r *Registry) stopWatcher(cur watch) {
	cur.cancel()
	_ = cur.w.Stop()
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	for {
		select {
		case _, ok := <-cur.w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			r.log.Warn("registry watcher did not close after Stop", "waited", drainTimeout)
			return
		}
	}
}

// rewatch creates a new watcher, retrying with backoff until it succeeds
// or Run's context ends (ok false).
func (r *Registry) rewatch() (cur watch, ok bool) {
	b := newBackoff()
	op := func() error {
		var err error
		cur, err = r.newWatch(r.ctx)
		return err
	}
	notify := func(err error, next time.Duration) {
		r.log.Warn("registry re-watch failed", "err", err, "retry_in", next)
	}
	if err := backoff.RetryNotify(op, backoff.WithContext(b, r.ctx), notify); err != nil {
		return watch{}, false // only once Run's context ended
	}
	r.wmu.Lock()
	r.watcher = cur.w
	r.wmu.Unlock()
	r.rewatches.Add(1)
	r.log.Info("registry watcher re-created")
	return cur, true
}

func (r *Registry) apply(e jetstream.KeyValueEntry) {
	key, rev := e.Key(), e.Revision()
	id, keyErr := parseKey(key)
	if e.Operation() != jetstream.KeyValuePut {
		delete(r.rejected, key)
		if keyErr == nil {
			r.remove(id, rev)
		}
		return
	}
	rec, err := r.decode(id, keyErr, e.Value())
	if err == nil {
		err = r.checkClaims(id, rec.HintEndpoints)
	}
	if err != nil {
		if last, ok := r.rejected[key]; !ok || last != rev {
			r.rejected[key] = rev
			r.invalid.Add(1)
			r.check.refused(err)
			r.log.Warn("ignoring invalid worker registry entry", "key", key, "revision", rev, "err", err)
		}
		if keyErr == nil {
			r.remove(id, rev)
		}
		return
	}
	delete(r.rejected, key)

	r.mu.Lock()
	old, had := r.records[id]
	if had && rev == old.rev {
		r.mu.Unlock()
		return // a re-created watcher replaying what we have
	}
	r.records[id] = entry{rev: rev, rec: rec}
	var prev []string
	if had {
		prev = old.rec.HintEndpoints
	}
	r.claim(id, prev, rec.HintEndpoints)
	r.mu.Unlock()

	switch {
	case !had:
		r.emit(Change{Kind: Added, WorkerID: id, Record: rec})
	case !reflect.DeepEqual(old.rec, rec):
		// A worker re-putting the same record (a refresh) is no change.
		r.emit(Change{Kind: Updated, WorkerID: id, Record: rec, Previous: old.rec})
	}
}

// remove drops worker id's record unless rev is the record's own.
//
// Revisions are compared for equality only: one watcher delivers in
// stream order, and a re-created one replays the current values, whose
// revisions may even be lower if the bucket was re-created meanwhile.
func (r *Registry) remove(id, rev uint64) {
	r.mu.Lock()
	old, had := r.records[id]
	if !had || rev == old.rev {
		r.mu.Unlock()
		return
	}
	delete(r.records, id)
	r.unclaim(id, old.rec.HintEndpoints)
	r.mu.Unlock()
	r.emit(Change{Kind: Deleted, WorkerID: id, Previous: old.rec})
}

// resync drops what a fresh watcher's replay did not mention.
func (r *Registry) resync(seen map[string]struct{}) {
	for k := range r.rejected {
		if _, ok := seen[k]; !ok {
			delete(r.rejected, k)
		}
	}
	r.mu.Lock()
	var gone []Change
	for id, e := range r.records {
		if _, ok := seen[Key(id)]; !ok {
			gone = append(gone, Change{Kind: Deleted, WorkerID: id, Previous: e.rec})
			delete(r.records, id)
			r.unclaim(id, e.rec.HintEndpoints)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(gone, func(a, b Change) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	for _, c := range gone {
		r.emit(c)
	}
}

func (r *Registry) emit(c Change) {
	r.models.apply(c)
	if r.onChange != nil {
		r.onChange(c)
	}
}
