package streams

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// A deleted stream of the set comes back empty, counted once; Run
// returns nil when its context ends.
func TestWatcherRecreatesADeletedStream(t *testing.T) {
	nc, js := natstest.Connect(t, natstest.Start(t))
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
	natstest.Eventually(t, 20*time.Second, func() bool { return recreated.Load() > 0 }, "deleted stream recreated")
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
