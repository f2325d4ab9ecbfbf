package client

import (
	"context"
	"fmt"
	"github.com/hintstream/hintstream/internal/metricstest"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// Batched asynchronous writes store every record under its session's
// key, as kv.Put would: more records than one batch holds, each
// readable back through the bucket's own API, and counted written only
// once acknowledged.
func TestAffinityWriterAsync(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := OpenAffinityBucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	w := NewAffinityWriter(kv, counters.Affinity(), nil, AffinityAsync(js))
	stop := natstest.Run(t, w.Run)
	const n = 3*DefaultAffinityBatch + 5
	for i := range n {
		w.RecordAffinity(fmt.Sprint("s ", i), schemas.AffinityRecord{WorkerID: uint64(i + 1), ExpiresAtMs: 1700000000000,
			RequestID: fmt.Sprint("wake-", i)})
	}
	w.RecordAffinity("", schemas.AffinityRecord{WorkerID: 1})
	stop()
	if c := metricstest.Snapshot(counters, "hintstream_affinity"); c["hintstream_affinity_written_total"] != n || c["hintstream_affinity_skipped_total|no_session"] != 1 ||
		c["hintstream_affinity_dropped_total"] != 0 {
		t.Fatalf("counters %v", c)
	}
	for _, i := range []int{0, DefaultAffinityBatch, n - 1} {
		e, err := kv.Get(ctx, schemas.AffinityKey(fmt.Sprint("s ", i)))
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		got, err := schemas.DecodeAffinityRecord(e.Value())
		if err != nil || got.WorkerID != uint64(i+1) || got.RequestID != fmt.Sprint("wake-", i) {
			t.Fatalf("record %d stored %+v %v", i, got, err)
		}
	}
}

// With the bus gone, the batched writer's Close is bounded too, and
// every record is counted dropped, none written.
func TestAffinityWriterAsyncCloseIsBounded(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := OpenAffinityBucket(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	counters := metrics.New()
	w := NewAffinityWriter(kv, counters.Affinity(), nil, AffinityAsync(js))
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
	c := metricstest.Snapshot(counters, "hintstream_affinity")
	if c["hintstream_affinity_written_total"] != 0 || c["hintstream_affinity_dropped_total"] != 50 {
		t.Fatalf("counters %v", c)
	}
}
