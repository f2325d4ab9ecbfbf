package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultLimitMarkerTTL is how long a bucket made by Bucket keeps the
// delete marker the server writes when a record's TTL runs out: long
// enough for a re-watching registry to see it, short enough not to pile
// up markers of workers long gone.
const DefaultLimitMarkerTTL = time.Minute

// ErrNoKeyTTL means the bucket was created without per-key TTL support
// (LimitMarkerTTL; for example by an older hintstream, whose Bucket did
// not set it): PutTTL cannot make a record expire there. Recreate the
// bucket, or delete records by hand.
var ErrNoKeyTTL = errors.New("registry: bucket has no per-key TTL (LimitMarkerTTL unset)")

// errCodeMessageTTLDisabled is nats-server's JSMessageTTLDisabledErr
// ("per-message TTL is disabled"); nats.go v1.55 names no constant for it.
const errCodeMessageTTLDisabled jetstream.ErrorCode = 10166

// SupportsTTL reports whether records in kv can carry their own TTL.
func SupportsTTL(ctx context.Context, kv jetstream.KeyValue) (bool, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("registry: bucket status: %w", err)
	}
	s, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return false, nil
	}
	return s.LimitMarkerTTL() > 0, nil
}

// PutTTL stores rec as Put does, but the record expires after ttl (whole
// seconds, at least one) unless stored again before: the server then
// removes it and every watcher sees a delete. The jetstream KV API has no
// Put with a TTL (KeyTTL applies to Create only), so this publishes to
// the bucket's subject with the Nats-TTL header, which is what a KV put
// is; it assumes the default $KV subject prefix (no JetStream domain).
// It fails with ErrNoKeyTTL on a bucket without per-key TTL.
func PutTTL(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, rec schemas.WorkerRecord, ttl time.Duration) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("registry: encode worker %d: %w", rec.WorkerID, err)
	}
	if _, err := (schemas.Limits{}).DecodeWorkerRecord(data); err != nil {
		return fmt.Errorf("registry: worker %d: %w", rec.WorkerID, err)
	}
	ttl = max(ttl.Truncate(time.Second), time.Second)
	if _, err := js.Publish(ctx, "$KV."+kv.Bucket()+"."+Key(rec.WorkerID), data, jetstream.WithMsgTTL(ttl)); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeMessageTTLDisabled {
			return ErrNoKeyTTL
		}
		return fmt.Errorf("registry: put worker %d: %w", rec.WorkerID, err)
	}
	return nil
}
