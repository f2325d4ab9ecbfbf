package streams

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// slowBucket is a real nats-server without JetStream whose KV_SLOW
// lookups this test answers itself: the first lookup goes unanswered (a
// cluster placing an R3 bucket under load), later ones find the bucket.
func slowBucket(t *testing.T) (jetstream.JetStream, *atomic.Int32) {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	api, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	lookups := new(atomic.Int32)
	if _, err := api.Subscribe("$JS.API.STREAM.INFO.KV_SLOW", func(m *nats.Msg) {
		if lookups.Add(1) == 1 {
			return // dropped: the caller's try times out
		}
		b, _ := json.Marshal(map[string]any{"type": "io.nats.jetstream.api.v1.stream_info_response",
			"config": map[string]any{"name": "KV_SLOW", "subjects": []string{"$KV.SLOW.>"}, "retention": "limits",
				"storage": "file", "num_replicas": 3, "discard": "new", "max_msgs_per_subject": 1, "allow_rollup_hdrs": true},
			"created": time.Now().UTC().Format(time.RFC3339Nano), "state": map[string]any{}})
		_ = m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	if err := api.Flush(); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return js, lookups
}

// A bucket lookup that timed out is retried within the retry window and
// attaches; with retries off the timeout is the answer.
func TestOpenKeyValueRetriesALookupThatTimedOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, lookups := slowBucket(t)
	kv, created, err := OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: "SLOW"})
	if err != nil {
		t.Fatal(err)
	}
	if created || kv.Bucket() != "SLOW" || lookups.Load() < 2 {
		t.Fatalf("created %v, bucket %q, lookups %d: want an attach after a retried lookup", created, kv.Bucket(), lookups.Load())
	}

	js, _ = slowBucket(t)
	_, _, err = OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: "SLOW"}, WithRetryTimeouts(0))
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("without retries: %v, want the try's timeout", err)
	}
}

// Created, then attached: the second open finds the first's bucket.
func TestOpenKeyValueCreatesThenAttaches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, js := natstest.Connect(t, natstest.Start(t))
	for i, want := range []bool{true, false} {
		_, created, err := OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: "B", History: 1})
		if err != nil || created != want {
			t.Fatalf("open %d: created %v, err %v; want created %v", i, created, err, want)
		}
	}
	obs, err := OpenObjectStore(ctx, js, jetstream.ObjectStoreConfig{Bucket: "O"})
	if err != nil || obs == nil {
		t.Fatalf("object store: %v", err)
	}
}
