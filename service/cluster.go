package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// DefaultKVEventsKeep is how much recent history a purge behind a
// snapshot leaves in the KV-event stream: enough to start a member from a
// slightly older snapshot, or to debug the last minutes by replay.
const DefaultKVEventsKeep = 15 * time.Minute

func (c Config) clusterDefaults() Config {
	if c.KVEventsKeep == 0 {
		c.KVEventsKeep = DefaultKVEventsKeep
	}
	return c
}

// placedJetStream creates every KV bucket and object store with the
// service's Placement (replicas and tags) unless the caller set its own:
// whichever package owns a bucket (registry, request index, pins,
// snapshots, and any added later) gets the cluster's replicas without
// knowing about them. Existing buckets are attached as they are.
type placedJetStream struct {
	jetstream.JetStream
	p streams.Placement
}

// placed wraps js when the placement is not the default.
func placed(js jetstream.JetStream, p streams.Placement) jetstream.JetStream {
	if p.Replicas <= 1 && len(p.Tags) == 0 {
		return js
	}
	return placedJetStream{JetStream: js, p: p}
}

func (j placedJetStream) place(replicas *int, pl **jetstream.Placement) {
	if *replicas <= 1 {
		*replicas = max(j.p.Replicas, 1)
	}
	if *pl == nil {
		*pl = j.p.JetStream()
	}
}

func (j placedJetStream) CreateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	j.place(&cfg.Replicas, &cfg.Placement)
	return j.JetStream.CreateKeyValue(ctx, cfg)
}

func (j placedJetStream) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	j.place(&cfg.Replicas, &cfg.Placement)
	return j.JetStream.CreateOrUpdateKeyValue(ctx, cfg)
}

func (j placedJetStream) CreateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	j.place(&cfg.Replicas, &cfg.Placement)
	return j.JetStream.CreateObjectStore(ctx, cfg)
}

func (j placedJetStream) CreateOrUpdateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	j.place(&cfg.Replicas, &cfg.Placement)
	return j.JetStream.CreateOrUpdateObjectStore(ctx, cfg)
}

// servesWorker reports whether w's model is one this member serves.
func (s *Service) servesWorker(w *schemas.WorkerRecord) bool { return s.served.Worker(w) }

// keepWorker decides whether KV events of worker id are indexed: a
// registered worker of another model is not; an unregistered one is (its
// events may precede its record; dropForeign removes it once the record
// says otherwise).
func (s *Service) keepWorker(id uint64) bool { return s.served.KeepWorker(s.registry, id) }

// dropForeign forgets a worker that turns out to serve a model this
// member does not: its blocks would only cost memory.
func (s *Service) dropForeign(ch registry.Change) {
	if s.served.All() || ch.Kind == registry.Deleted || s.servesWorker(ch.Record) {
		return
	}
	s.Index.RemoveWorker(ch.WorkerID)
	s.Loads.RemoveWorker(ch.WorkerID)
}

// modelWorkers is the registry as this member's selector sees it: only
// workers of the models it serves (registry.Served, shared with replay).
type modelWorkers struct{ s *Service }

func (m modelWorkers) Workers() []schemas.WorkerRecord { return m.s.served.Workers(m.s.registry) }

func (m modelWorkers) WorkersFor(model string) []schemas.WorkerRecord {
	return m.s.served.WorkersFor(m.s.registry, model)
}

// consumerFilter narrows a request or response stream's subjects to the
// served models' subjects (registry.Served.Subjects).
func (s *Service) consumerFilter(subjects []string, prefix string) []string {
	return s.served.Subjects(subjects, prefix)
}

// snapshotSuffix keeps snapshots of members serving different models
// apart: a member must not load an index that lacks its workers.
func (s *Service) snapshotSuffix() string {
	if len(s.cfg.Models) == 0 {
		return ""
	}
	ms := slices.Clone(s.cfg.Models)
	sort.Strings(ms)
	return fmt.Sprintf("/models-%016x", xxh3.HashString(strings.Join(ms, "\x00")))
}

// keepWorkerFunc is the KV applier's filter of events by worker
// (index.ApplierConfig.KeepWorker): nil when every model is served.
func (s *Service) keepWorkerFunc() func(uint64) bool {
	if s.served.All() {
		return nil
	}
	return s.keepWorker
}

// ErrPermissionDenied: start-up failed while the NATS server was refusing
// this user a permission hintstream needs (the error names the subject).
// Trying again is useless until an operator grants it.
var ErrPermissionDenied = errors.New("a NATS permission hintstream needs is missing")

// explainPermission replaces a start-up error that was really a
// permission refusal (reported by nats.go asynchronously, so the call
// itself only timed out) with one that says so.
func (s *Service) explainPermission(err error) error {
	if s.nc == nil || errors.Is(err, ErrPermissionDenied) {
		return err
	}
	if last := s.nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) {
		return fmt.Errorf("%w: %v", ErrPermissionDenied, last)
	}
	return err
}

// failFast returns a context that is cancelled as soon as the server
// refuses this user a permission: a refused request is never answered,
// and without this each of the first calls would wait out its timeout
// (5 s) in turn. done restores the connection's error handler.
func (s *Service) failFast(ctx context.Context) (context.Context, func()) {
	fctx, cancel := context.WithCancelCause(ctx)
	prev := s.nc.Opts.AsyncErrorCB
	s.nc.SetErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			cancel(err)
		}
		if prev != nil {
			prev(nc, sub, err)
		}
	})
	return fctx, func() {
		s.nc.SetErrorHandler(prev)
		cancel(nil)
	}
}
