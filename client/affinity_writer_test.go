package client

import (
	"context"
	"fmt"
	"github.com/hintstream/hintstream/internal/metricstest"
	"reflect"
	"strings"
	"testing"
	"time"

	"errors"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// The writer puts each record under the session's key, skips sessions
// that cannot have a key, and a second open attaches to the bucket the
// first created (memory storage, entries aged out).
func TestAffinityWriter(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := OpenAffinityBucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bucket() != schemas.DefaultAffinityBucket || st.TTL() != DefaultAffinityMaxAge ||
		st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Storage != jetstream.MemoryStorage {
		t.Fatalf("bucket %s, ttl %v", st.Bucket(), st.TTL())
	}
	if _, err := OpenAffinityBucket(ctx, js, schemas.DefaultAffinityBucket); err != nil {
		t.Fatalf("second open: %v", err)
	}
	counters := metrics.New()
	w := NewAffinityWriter(kv, counters.Affinity(), nil)
	stop := natstest.Run(t, w.Run)
	rec := schemas.AffinityRecord{WorkerID: 3, DpRank: 1, ExpiresAtMs: 1700000000000, RequestID: "wake-9"}
	w.RecordAffinity("s 9", rec)
	w.RecordAffinity("", rec)
	w.RecordAffinity(strings.Repeat("x", schemas.MaxAffinitySession+1), rec)
	stop()
	if err := w.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run: %v, want ErrAlreadyRunning", err)
	}
	if counters.AffinityWritten.Value() != 1 || counters.AffinitySkipped.Value("no_session") != 2 {
		t.Fatalf("counters %v", metricstest.Snapshot(counters, "hintstream_affinity"))
	}
	e, err := kv.Get(ctx, schemas.AffinityKey("s 9"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := schemas.DecodeAffinityRecord(e.Value())
	if err != nil || !reflect.DeepEqual(*got, rec) {
		t.Fatalf("stored %+v %v", got, err)
	}
}

// With the bus gone, stopping does not wait for every queued put to time
// out: it gives up after its grace and counts what it dropped.
func TestAffinityWriterCloseIsBounded(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := OpenAffinityBucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	w := NewAffinityWriter(kv, counters.Affinity(), nil)
	stop := natstest.Run(t, w.Run)
	srv.Shutdown()
	srv.WaitForShutdown()
	for i := range 50 {
		w.RecordAffinity(fmt.Sprint("s-", i), schemas.AffinityRecord{WorkerID: 1, ExpiresAtMs: 1})
	}
	start := time.Now()
	stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v with the bus down", d)
	}
	w.RecordAffinity("late", schemas.AffinityRecord{WorkerID: 1, ExpiresAtMs: 1})
	c := metricstest.Snapshot(counters, "hintstream_affinity")
	if c["hintstream_affinity_written_total"] != 0 || c["hintstream_affinity_dropped_total"] != 51 || c["hintstream_affinity_dropped_total|closed"] == 0 {
		t.Fatalf("counters %v", c)
	}
}
