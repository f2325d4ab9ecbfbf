package streams

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// slowJetStream is a real nats-server without JetStream whose
// $JS.API.STREAM requests this test answers itself: the first create
// goes unanswered (a cluster too busy to answer within the request
// timeout) but takes effect, as a slow one does; later lookups find the
// stream.
func slowJetStream(t *testing.T) (js jetstream.JetStream, creates *atomic.Int32) {
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
	creates = new(atomic.Int32)
	var created atomic.Bool
	info := func(m *nats.Msg) {
		if !created.Load() {
			_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":404,"err_code":10059,"description":"stream not found"}}`))
			return
		}
		b, _ := json.Marshal(map[string]any{"type": "io.nats.jetstream.api.v1.stream_info_response",
			"config": map[string]any{"name": "SLOW", "subjects": []string{"slow.>"}, "retention": "limits", "storage": "file",
				"num_replicas": 1, "discard": "old"},
			"created": time.Now().UTC().Format(time.RFC3339Nano), "state": map[string]any{}})
		_ = m.Respond(b)
	}
	if _, err := api.Subscribe("$JS.API.STREAM.INFO.SLOW", info); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Subscribe("$JS.API.STREAM.CREATE.SLOW", func(m *nats.Msg) {
		creates.Add(1)
		created.Store(true) // taken, never answered
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
	if js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	return js, creates
}

// A create that timed out is retried: the retry looks the stream up,
// finds what the slow create made, and attaches. Without retries (or
// once the caller's context ends) the timeout is the answer.
func TestEnsureRetriesARequestThatTimedOut(t *testing.T) {
	cfg := Config{Name: "SLOW", Subjects: []string{"slow.>"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	js, creates := slowJetStream(t)
	_, oc, err := Ensure(ctx, js, cfg)
	if err != nil || oc != Attached || creates.Load() != 1 {
		t.Fatalf("Ensure: %v, %v after %d creates; want attached after 1", oc, err, creates.Load())
	}

	js, _ = slowJetStream(t)
	if _, _, err := Ensure(ctx, js, cfg, WithRetryTimeouts(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("without retries: %v, want the request's timeout", err)
	}

	js, creates = slowJetStream(t)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	if _, _, err := Ensure(short, js, cfg); err == nil || creates.Load() != 1 {
		t.Fatalf("with the caller's context ending: %v after %d creates", err, creates.Load())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Ensure went on %v past its caller's context", d)
	}
}
