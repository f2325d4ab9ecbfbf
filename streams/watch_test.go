package streams

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A deleted stream of the set comes back empty, counted once; Run
// returns nil when its context ends.
func TestWatcherRecreatesADeletedStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Name: "WATCHED", Subjects: []string{"watched.>"}}
	if _, _, err := Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	var recreated atomic.Int32
	w := NewWatcher(nc, js, []Config{cfg, {}}, nil, func(name string) {
		if name == "WATCHED" {
			recreated.Add(1)
		}
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	// The subscription is in place once the watcher's first request is
	// answered; deleting before would leave it to the periodic check,
	// which the test also accepts.
	if err := js.DeleteStream(ctx, "WATCHED"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for recreated.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("deleted stream not recreated")
		}
		<-time.After(10 * time.Millisecond)
	}
	if _, err := js.Stream(ctx, "WATCHED"); err != nil {
		t.Fatalf("recreated stream not found: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := recreated.Load(); n != 1 {
		t.Fatalf("recreated %d times, want 1", n)
	}
	if _, err := js.Stream(ctx, "OTHER"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a stream outside the set: %v", err)
	}
}
