package service

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// TestRunBridgesDynamoZMQ: with DynamoZMQ (run's --dynamo-zmq) the
// service bridges Dynamo's ZMQ event plane itself: a worker's KV events
// and load, sent by a stand-in publisher (Python, frames from the
// independent builder), reach the index and the load table.
func TestRunBridgesDynamoZMQ(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	scope := eventplane.Scope{Namespace: "dynamo", Component: "backend"}
	pub := pypeer.StartDynamoPub(t)
	svc := New(Config{NATSURL: srv.ClientURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Streams: scope.ApplyGiven(streams.DefaultSet()), DynamoScope: scope, DynamoZMQ: []string{pub.Endpoint()}})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	pub.Await(2)

	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 7, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := svc.Registry().Get(7); return ok }, "worker 7 registered")

	tokens := make([]uint32, 48)
	for i := range tokens {
		tokens[i] = uint32(100 + i)
	}
	specs, _ := json.Marshal([]map[string]any{
		{"kind": "kv", "namespace": "dynamo", "component": "backend", "worker": 7, "event_id": 1, "tokens": tokens,
			"block_size": 16, "publisher": 11, "sequence": 0},
		{"kind": "load", "namespace": "dynamo", "component": "backend", "endpoint": "generate", "worker": 7,
			"decode": 5, "used": 9, "publisher": 12, "sequence": 0},
	})
	cmd := exec.Command(pypeer.Python(), "../ingest/eventplane/testdata/dynamo_frames.py", "frames")
	cmd.Stdin = bytes.NewReader(specs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("frame builder: %v", err)
	}
	var frames []struct{ Subject, Hex string }
	if err := json.Unmarshal(out, &frames); err != nil {
		t.Fatal(err)
	}
	for i, topic := range []string{eventplane.TopicKVEvents, eventplane.TopicKVMetrics} {
		env, _ := hex.DecodeString(frames[i].Hex)
		pub.Send(pypeer.DynamoFrame{Topic: topic, Envelope: env})
	}
	key := kvevents.WorkerKey{WorkerID: 7}
	natstest.Eventually(t, 10*time.Second, func() bool {
		return svc.Index.Overlap(kvevents.PromptHashes(tokens, 16))[key] == 3 && svc.Loads.Get(key).DecodeBlocks() == 5
	}, "the ZMQ frames in the index and the load table")
}

// --dynamo-zmq alone reads Dynamo's default scope: the KV-events and load
// streams capture namespace.dynamo.component.backend's subjects.
func TestDynamoZMQFlags(t *testing.T) {
	c, err := parseRunFlags("--dynamo-zmq", "tcp://10.0.0.7:41234,tcp://10.0.0.8:41234", "--dynamo-zmq", "tcp://10.0.0.9:1")
	if err != nil {
		t.Fatal(err)
	}
	def := eventplane.Scope{Namespace: eventplane.DefaultNamespace, Component: eventplane.DefaultComponent}
	if len(c.DynamoZMQ) != 3 || c.DynamoZMQBroker || !slices.Contains(c.Streams.KVEvents.Subjects, def.KVEventSubjects()[0]) ||
		!slices.Contains(c.Streams.Load.Subjects, def.LoadSubjects()[1]) {
		t.Fatalf("endpoints %q, streams %+v", c.DynamoZMQ, c.Streams)
	}
	c, err = parseRunFlags()
	if err != nil || len(c.DynamoZMQ) != 0 || slices.ContainsFunc(c.Streams.KVEvents.Subjects, eventplane.IsKVEventsSubject) {
		t.Fatalf("no flags: %+v %v", c.Streams.KVEvents, err)
	}
}
