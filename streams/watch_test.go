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

// A stream the watcher recreated keeps what is published to it, over 200
// deletions (DefaultRecreateDelay says why a delay is needed; with none,
// round 179 of a run under -race got no answer). The rounds use a 50 ms
// delay so the test stays short; the default is checked to be applied.
func TestWatcherRecreatedStreamStores(t *testing.T) {
	nc, js := natstest.Connect(t, natstest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := Config{Name: "WATCHED", Subjects: []string{"watched.>"}}
	if _, _, err := Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	recreated := make(chan time.Time, 1)
	w := NewWatcher(nc, js, []Config{cfg}, nil, func(string) { recreated <- time.Now() })
	if w.delay != DefaultRecreateDelay {
		t.Fatalf("delay %v, want DefaultRecreateDelay", w.delay)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	round := func(i int) time.Duration {
		t.Helper()
		if _, err := js.Publish(ctx, "watched.a", []byte("before")); err != nil {
			t.Fatalf("round %d, before the deletion: %v", i, err)
		}
		deleted := time.Now()
		if err := js.DeleteStream(ctx, "WATCHED"); err != nil {
			t.Fatal(err)
		}
		var at time.Time
		select {
		case at = <-recreated:
		case <-ctx.Done():
			t.Fatalf("round %d: not recreated", i)
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := js.Publish(pctx, "watched.a", []byte("after"))
		pcancel()
		if err != nil {
			t.Fatalf("round %d: publish to the recreated stream: %v", i, err)
		}
		return at.Sub(deleted)
	}
	if d := round(0); d < DefaultRecreateDelay {
		t.Fatalf("recreated %v after the deletion, before DefaultRecreateDelay (%v)", d, DefaultRecreateDelay)
	}
	w.mu.Lock() // a recreation reads delay in a goroutine started under mu
	w.delay = 50 * time.Millisecond
	w.mu.Unlock()
	for i := 1; i <= 200; i++ {
		round(i)
	}
}
