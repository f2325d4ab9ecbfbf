package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the registry's KV bucket; operators and workers address
// it by this name (see the brief's defaults table).
const DefaultBucket = "hintstream_workers"

// Bucket attaches to the KV bucket name (DefaultBucket when empty), and
// creates it with History 1 when absent: only a worker's current record
// matters. An existing bucket's configuration is never changed.
func Bucket(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	if name == "" {
		name = DefaultBucket
	}
	kv, _, err := streams.OpenKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      name,
		Description: "hintstream worker registry: key = worker id, value = worker record JSON",
		History:     1,
		// Per-key TTL (client.Register): a record not refreshed expires,
		// and the expiry reaches every watcher as a delete.
		LimitMarkerTTL: DefaultLimitMarkerTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return kv, nil
}

// Put stores rec under its worker id in decimal. It rejects a record the
// registry would reject when reading it back, so a bad record fails at the
// writer rather than being skipped by every reader.
func Put(ctx context.Context, kv jetstream.KeyValue, rec schemas.WorkerRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("registry: encode worker %d: %w", rec.WorkerID, err)
	}
	// ipc:// passes here: whether readers take it is their
	// --allow-ipc-endpoints (WithEndpointRules), not the writer's.
	if _, err := (schemas.Limits{}).DecodeWorkerRecordWith(data, schemas.EndpointRules{AllowIPC: true}); err != nil {
		return fmt.Errorf("registry: worker %d: %w", rec.WorkerID, err)
	}
	if _, err := kv.Put(ctx, Key(rec.WorkerID), data); err != nil {
		return fmt.Errorf("registry: put worker %d: %w", rec.WorkerID, err)
	}
	return nil
}

// Key is the bucket key of worker id.
func Key(id uint64) string { return strconv.FormatUint(id, 10) }

// parseKey accepts only what Key produces: "007" would be a second name
// for worker 7.
func parseKey(key string) (uint64, error) {
	if key == "" {
		return 0, errors.New("empty key")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return 0, fmt.Errorf("key %q is not a decimal worker id", key)
		}
	}
	if len(key) > 1 && key[0] == '0' {
		return 0, fmt.Errorf("key %q has leading zeros", key)
	}
	id, err := strconv.ParseUint(key, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("key %q does not fit in 64 bits", key)
	}
	return id, nil
}
