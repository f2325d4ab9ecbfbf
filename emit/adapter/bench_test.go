package adapter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/standin"
)

// notifying is a RoundTripper that reports each finished engine call, so
// the benchmark waits for the adapter without polling.
type notifying struct {
	rt   http.RoundTripper
	done chan struct{}
}

func (n notifying) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(r)
	if err == nil {
		resp.Body = notifyBody{resp.Body, n.done}
	}
	return resp, err
}

type notifyBody struct {
	io.ReadCloser
	done chan struct{}
}

func (b notifyBody) Close() error {
	err := b.ReadCloser.Close()
	b.done <- struct{}{}
	return err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAdapterOverhead measures, per hint of a 2,048-token prompt,
// one at a time against the vLLM stand-in:
//   - direct: this process builds the same JSON body and POSTs it to the
//     stand-in over a kept-alive connection (the baseline: what any
//     client of the engine pays);
//   - adapter: hintstream's sender encodes the kv.prefetch and pushes it
//     over ZeroMQ, the adapter decodes it, dedups, queues, builds the
//     body and POSTs it; the clock stops when the engine's answer is read.
//
// It reports each path's wall time and this process's CPU time (user +
// system, both sides of the ZeroMQ hop included) per hint, and their
// ratios. Run with -count to get several runs for min and median:
//
//	go test ./adapter/ -run '^$' -bench AdapterOverhead -benchtime 2000x -count 5
func BenchmarkAdapterOverhead(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), standin.Timeout)
	e, err := standin.Start(ctx, b.TempDir(), "--engine", "vllm", "--model", model)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	toks := tokens(2048)
	done := make(chan struct{}, 1)
	client := &http.Client{Transport: notifying{rt: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}, done: done}}
	a, err := New(Config{Bind: "tcp://127.0.0.1:*", Engine: EngineVLLM, EngineURL: e.URL, MaxInflight: 1}, WithHTTPClient(client))
	if err != nil {
		b.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(rctx) }()
	defer func() { stop(); <-ran }()
	pool, err := zmqsend.NewPool()
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = pool.Close(cctx)
	}()
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}

	viaAdapter := func(i int) {
		p := actions.Prefetch{RequestID: fmt.Sprintf("bench-%d", i), SessionID: "s", Model: model, TokenIDs: toks,
			ExpiresAt: time.Now().Add(time.Minute)}
		body, id, err := actions.EncodePrefetch(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := pool.Send(a.Endpoint(), actions.Hint{MessageID: id, Body: body, Deadline: p.ExpiresAt}); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	viaHTTP := func(i int) {
		c, err := buildCall(EngineVLLM, e.URL, warmUp{tokens: toks, model: model, claim: "hintstream/s", revision: int64(i),
			value: DefaultPrefetchValue, ttl: 120, msgID: fmt.Sprintf("bench-%d", i)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := direct.Post(c.url, "application/json", bytes.NewReader(c.body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	measure := func(f func(int), base int) (wall, cpu time.Duration) {
		w0, c0 := time.Now(), cpuTime()
		for i := range b.N {
			f(base + i)
		}
		return time.Since(w0) / time.Duration(b.N), (cpuTime() - c0) / time.Duration(b.N)
	}
	viaAdapter(0) // connections up on both paths before the clock starts
	viaHTTP(0)
	b.ResetTimer()
	dWall, dCPU := measure(viaHTTP, 1)
	aWall, aCPU := measure(viaAdapter, 1)
	b.StopTimer()
	if got := a.Counters().Calls.With("kv.prefetch").Value(); got != uint64(b.N+1) {
		b.Fatalf("adapter made %d calls, want %d", got, b.N+1)
	}
	b.ReportMetric(float64(dWall.Microseconds()), "direct-µs/hint")
	b.ReportMetric(float64(aWall.Microseconds()), "adapter-µs/hint")
	b.ReportMetric(float64(aWall)/float64(dWall), "wall-ratio")
	b.ReportMetric(float64(dCPU.Microseconds()), "direct-cpu-µs/hint")
	b.ReportMetric(float64(aCPU.Microseconds()), "adapter-cpu-µs/hint")
	b.ReportMetric(float64(aCPU)/float64(max(dCPU, 1)), "cpu-ratio")
}
