package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A lookup the server dropped is tried again through Patient; the plain
// JetStream gives up with the timeout.
func TestPatientRetriesADroppedLookup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, lookups := slowBucket(t)
	kv, err := Patient(js).KeyValue(ctx, "SLOW")
	if err != nil || kv.Bucket() != "SLOW" || lookups.Load() < 2 {
		t.Fatalf("bucket %v, err %v after %d lookups: want an attach after a retried lookup", kv, err, lookups.Load())
	}
	js, _ = slowBucket(t)
	tctx, tcancel := context.WithTimeout(ctx, time.Second)
	defer tcancel()
	if _, err := js.KeyValue(tctx, "SLOW"); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("plain lookup: %v, want its timeout", err)
	}
}
