package loadtest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// cluster is one hintstream instance on an embedded server with n
// registered workers whose PULL sockets count what they receive.
type cluster struct {
	svc      *service.Service
	js       jetstream.JetStream
	received []int // per worker
	mu       sync.Mutex
	got      chan int // worker index of every hint
}

func startCluster(b *testing.B, cfg service.Config, n int) *cluster {
	b.Helper()
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv)
	ctx := context.Background()
	cfg.NATSURL = srv.ClientURL()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &cluster{svc: service.New(cfg), js: js, received: make([]int, n), got: make(chan int, 1<<16)}
	if err := c.svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.svc.Stop(context.Background()) })
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		s, err := zmq.NewSocket(zmq.PULL)
		if err != nil {
			b.Fatal(err)
		}
		ep := zmqtest.Serve(b, s, "tcp://127.0.0.1:*", func([]byte) {
			c.mu.Lock()
			c.received[i]++
			c.mu.Unlock()
			c.got <- i
		})
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: uint64(i + 1), Model: "m", KvBlockSize: 16,
			HintEndpoints: []string{ep}}); err != nil {
			b.Fatal(err)
		}
	}
	natstest.Eventually(b, 10*time.Second, func() bool { return len(c.svc.Registry().Workers()) == n },
		"workers registered")
	return c
}

// wait blocks until n more hints arrived, failing after within.
func (c *cluster) wait(b *testing.B, n int, within time.Duration) {
	b.Helper()
	deadline := time.After(within)
	for i := 0; i < n; i++ {
		select {
		case <-c.got:
		case <-deadline:
			b.Fatalf("only %d of %d hints within %v", i, n, within)
		}
	}
}
