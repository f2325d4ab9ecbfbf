package client

// Prefetch affinity: where hintstream sent a wake-up's prefetch, so the
// frontend can route the session's next request there.
//
// # Handing it to Dynamo's router
//
// Dynamo accepts an explicit worker on a request in two equivalent ways
// (ai-dynamo/dynamo lib/llm/src/protocols/openai/nvext.rs, commit
// 03f06d1928b6672d859cb11aea9b182f432842d8):
//
//   - in the request body, "nvext": {"backend_instance_id": <worker_id>,
//     "dp_rank": <dp_rank>} (NvExt.backend_instance_id: "If set, the
//     request will be routed to backend instance with the given ID");
//   - as HTTP headers x-worker-instance-id and x-dp-rank, which
//     apply_header_routing_overrides copies into nvext (backend_instance_id
//     and decode_worker_id; dp_rank), taking priority over the body.
//
// The router turns that into the scheduler's pinned_worker
// (lib/kv-router/src/scheduling/types.rs, commit
// 01690d42e3b9436ab3a6a365fc9beabf58c105c6: ScheduleRequest.pinned_worker,
// Option<WorkerWithDpRank>), and the default selector then skips scoring
// and takes that worker (lib/kv-router/src/scheduling/selector/default.rs,
// commit 07a6c9ce3bb096cfaf353fe69ee578e105c6a512, pick_default_worker).
// It is a pin, not a preference: a pinned worker that is overloaded fails
// the request with PinnedWorkerOverloaded, and one outside the allowed
// set with PinnedWorkerNotAllowed (types.rs), rather than routing
// elsewhere. The scheduler's softer preferred_worker (used only when
// eligible, else normal scoring; default.rs) is set by Dynamo's own
// session-affinity coordinator, not from the request, so a frontend
// cannot reach it. Hence: pass the worker only while the record is
// unexpired (PreferredWorker checks), and on a pinned-worker error retry
// the request once without it. A dp_rank without a worker is rejected
// ("DP rank requires an explicit worker"), so send both or neither.
//
// The record's worker_id is the id in hintstream's worker registry, which
// is the worker's Dynamo instance id (the worker_id of its KV events).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// Dynamo's routing-override headers (nvext.rs, see above).
const (
	HeaderWorkerInstanceID = "x-worker-instance-id"
	HeaderDpRank           = "x-dp-rank"
)

// ErrNoPreference is returned by PreferredWorker when the session has no
// unexpired record: route the request as usual.
var ErrNoPreference = errors.New("client: no preferred worker for the session")

// Preferred is the worker a session's last wake-up was prefetched to.
type Preferred struct {
	WorkerID  uint64
	DpRank    uint32
	ExpiresAt time.Time
	// RequestID is the wake-up's request_id.
	RequestID string
}

// Headers are the HTTP headers that pin the request to the worker in
// Dynamo's frontend.
func (p Preferred) Headers() map[string]string {
	return map[string]string{HeaderWorkerInstanceID: strconv.FormatUint(p.WorkerID, 10),
		HeaderDpRank: strconv.FormatUint(uint64(p.DpRank), 10)}
}

// NvExt is the same pin as request-body fields, to merge into "nvext".
func (p Preferred) NvExt() map[string]any {
	return map[string]any{"backend_instance_id": p.WorkerID, "dp_rank": p.DpRank}
}

// Affinity reads hintstream's affinity bucket (default
// "hintstream_affinity", schemas.AffinityRecord entries). Safe for
// concurrent use.
type Affinity struct {
	kv      jetstream.KeyValue
	workers jetstream.KeyValue // nil: no registry check (affinity_turn.go)
	now     func() time.Time
}

// AffinityOption configures an Affinity.
type AffinityOption func(*Affinity)

// WithAffinityClock sets the clock expiry is judged by (default
// time.Now); a simulation passes its own.
func WithAffinityClock(now func() time.Time) AffinityOption {
	return func(a *Affinity) {
		if now != nil {
			a.now = now
		}
	}
}

// OpenAffinity attaches to bucket (empty: schemas.DefaultAffinityBucket).
// It fails if the bucket does not exist: hintstream creates it at
// start-up unless run with --affinity-bucket "".
func OpenAffinity(ctx context.Context, js jetstream.JetStream, bucket string, opts ...AffinityOption) (*Affinity, error) {
	if bucket == "" {
		bucket = schemas.DefaultAffinityBucket
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("client: affinity bucket %q: %w", bucket, err)
	}
	// The registry goes first so that an explicit WithAffinityRegistry
	// wins.
	return NewAffinity(kv, append([]AffinityOption{WithAffinityRegistry(attachRegistry(ctx, js))}, opts...)...), nil
}

// NewAffinity reads the given bucket.
func NewAffinity(kv jetstream.KeyValue, opts ...AffinityOption) *Affinity {
	a := &Affinity{kv: kv, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// PreferredWorker returns where session's last wake-up was prefetched,
// while that prefetch is unexpired and its worker registered (when a
// registry is attached, see WithAffinityRegistry). No record, an expired one, or a
// session id that cannot have one (empty, or longer than
// schemas.MaxAffinitySession) gives ErrNoPreference; a record that does
// not decode gives an error matching schemas.ErrMalformed; a bus failure
// is returned as is. A frontend treats every error as "no preference".
func (a *Affinity) PreferredWorker(ctx context.Context, session string) (Preferred, error) {
	key := schemas.AffinityKey(session)
	if key == "" {
		return Preferred{}, ErrNoPreference
	}
	e, err := a.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Preferred{}, ErrNoPreference
	}
	if err != nil {
		return Preferred{}, fmt.Errorf("client: affinity of session: %w", err)
	}
	rec, err := schemas.DecodeAffinityRecord(e.Value())
	if err != nil {
		return Preferred{}, err
	}
	p := Preferred{WorkerID: rec.WorkerID, DpRank: rec.DpRank, ExpiresAt: time.UnixMilli(rec.ExpiresAtMs), RequestID: rec.RequestID}
	if !a.now().Before(p.ExpiresAt) {
		return Preferred{}, ErrNoPreference
	}
	// A worker that left the registry is not preferred, whatever the
	// record says.
	if ok, err := a.registered(ctx, p.WorkerID); err != nil || !ok {
		if err == nil {
			err = ErrNoPreference
		}
		return Preferred{}, err
	}
	return p, nil
}
