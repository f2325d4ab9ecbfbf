package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/emit/adapter"
	"github.com/hintstream/hintstream/internal/standin"
)

// demoEngineFlag registers run's --demo-engine: with --demo, the workers'
// hints also go to a `hintstream adapter` in front of a stand-in engine
// (internal/standin), which prints each warm-up call it makes.
func demoEngineFlag(fs *flag.FlagSet) *string {
	return fs.String("demo-engine", "", "with --demo: also pass every hint to `hintstream adapter` in front of a stand-in "+
		"sglang or vllm engine (needs /usr/bin/python3), printing each warm-up call; empty: off")
}

// demoEngine is the adapter and stand-in engine of --demo-engine.
type demoEngine struct {
	engine *standin.Engine
	dir    string
	pool   *zmqsend.Pool
	ad     *adapter.Adapter
	stop   context.CancelFunc
	done   chan error
}

// printCalls prints each engine call the adapter makes.
type printCalls struct {
	rt     http.RoundTripper
	out    io.Writer
	engine string
	mu     sync.Mutex
}

func (p *printCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := p.rt.RoundTrip(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		fmt.Fprintf(p.out, "demo: ← %s stand-in unreachable for a warm-up: %v\n", p.engine, err)
		return nil, err
	}
	fmt.Fprintf(p.out, "demo: ← adapter warmed the %s stand-in: POST %s → %d in %v\n", p.engine, r.URL.Path,
		resp.StatusCode, time.Since(start).Round(100*time.Microsecond))
	return resp, nil
}

// startDemoEngine starts the stand-in and the adapter; Forward passes
// a worker's hint to the adapter over ZeroMQ, as the worker's own hint
// socket would have received it.
func startDemoEngine(ctx context.Context, engine string, out io.Writer, log *slog.Logger) (*demoEngine, error) {
	if engine != adapter.EngineSGLang && engine != adapter.EngineVLLM {
		return nil, usagef("--demo-engine %q: want sglang or vllm", engine)
	}
	dir, err := os.MkdirTemp("", "hintstream-demo-engine-")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, standin.Timeout)
	defer cancel()
	e, err := standin.Start(sctx, dir, "--engine", engine, "--model", "Qwen/Qwen3-8B")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client := &http.Client{Transport: &printCalls{rt: http.DefaultTransport, out: out, engine: engine}}
	ad, err := adapter.New(adapter.Config{Bind: "tcp://127.0.0.1:*", Engine: engine, EngineURL: e.URL, Model: "Qwen/Qwen3-8B"},
		adapter.WithLogger(log), adapter.WithHTTPClient(client))
	if err != nil {
		e.Stop()
		os.RemoveAll(dir)
		return nil, err
	}
	pool, err := zmqsend.NewPool()
	if err != nil {
		e.Stop()
		os.RemoveAll(dir)
		return nil, err
	}
	actx, stop := context.WithCancel(ctx)
	d := &demoEngine{engine: e, dir: dir, pool: pool, ad: ad, stop: stop, done: make(chan error, 1)}
	go func() { d.done <- ad.Run(actx) }()
	fmt.Fprintf(out, "demo: hints also go to `hintstream adapter` at %s in front of a %s stand-in at %s\n", ad.Endpoint(), engine, e.URL)
	return d, nil
}

// Forward is demo.Options.Forward.
func (d *demoEngine) Forward(_ uint64, msg []byte) {
	_ = d.pool.Send(d.ad.Endpoint(), actions.Hint{MessageID: "demo", Body: append([]byte(nil), msg...), Deadline: time.Now().Add(5 * time.Second)})
}

// Close stops the adapter, the sender and the stand-in.
func (d *demoEngine) Close() {
	d.stop()
	<-d.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.pool.Close(ctx)
	d.engine.Stop()
	os.RemoveAll(d.dir)
}
