package speed

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go/jetstream"
)

// registerIngestWorkers registers workers 1..n where absent (another
// measurement's records are kept): hintstream indexes the KV events of
// registered workers only and holds the others'.
func registerIngestWorkers(ctx context.Context, js jetstream.JetStream, n int) error {
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		return err
	}
	for id := 1; id <= n; id++ {
		b, err := json.Marshal(schemas.WorkerRecord{WorkerID: uint64(id), Model: loadModel, KvBlockSize: 16,
			HintEndpoints: []string{"tcp://127.0.0.1:" + strconv.Itoa(20000+id)}})
		if err != nil {
			return err
		}
		if _, err := kv.Create(ctx, registry.Key(uint64(id)), b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
	return nil
}
