package e2e

// Helpers of the fault-injection tests (fault_*_test.go): a worker's hint
// socket that can be closed, reopened on the same port or read slowly,
// Prometheus scraping, process memory and one-line figures for
// docs/reliability.md.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// hintRecv is one prefetch a fault sink received.
type hintRecv struct {
	messageID, requestID string
	expiresAt, at        time.Time
}

// faultSink stands in for a worker's scheduler: a PULL socket on a fixed
// loopback port that the test can close and reopen (the worker going
// down and coming back) or read at a fixed pace (a slow worker).
type faultSink struct {
	t    *testing.T
	ep   string
	pace time.Duration // > 0: read one message per pace

	mu   sync.Mutex
	got  []hintRecv
	seen map[string]int
	stop chan struct{}
	done chan struct{}
}

// newFaultSink binds a sink on a free port; pace > 0 reads slowly, with
// a receive high-water mark of 10.
func newFaultSink(t *testing.T, pace time.Duration) *faultSink {
	t.Helper()
	s := &faultSink{t: t, ep: fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)), pace: pace, seen: map[string]int{}}
	s.open()
	t.Cleanup(s.close)
	return s
}

// open binds the socket again at the same endpoint.
func (s *faultSink) open() {
	s.t.Helper()
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		s.t.Fatal(err)
	}
	_ = sock.SetRcvtimeo(20 * time.Millisecond)
	_ = sock.SetLinger(0)
	if s.pace > 0 {
		// A slow worker buffers little, so back-pressure reaches the
		// sender at once rather than after ZMQ's default 1,000 messages.
		_ = sock.SetRcvhwm(10)
	}
	// The port was just released by close: TIME_WAIT never blocks a
	// listening bind, but give a racing close a moment by retrying.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err = sock.Bind(s.ep); err == nil {
			break
		}
		if time.Now().After(deadline) {
			sock.Close()
			s.t.Fatalf("bind %s: %v", s.ep, err)
		}
		<-time.After(20 * time.Millisecond)
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.run(sock, s.stop, s.done)
}

func (s *faultSink) run(sock *zmq.Socket, stop, done chan struct{}) {
	defer close(done)
	defer sock.Close()
	var tick <-chan time.Time
	if s.pace > 0 {
		tk := time.NewTicker(s.pace)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		if tick != nil { // the slow worker's pace: this is the fault itself
			select {
			case <-stop:
				return
			case <-tick:
			}
		}
		b, err := sock.RecvBytes(0)
		if err != nil {
			if zmq.AsErrno(err) == zmq.ETERM {
				return
			}
			continue // EAGAIN: check stop
		}
		s.record(b)
	}
}

func (s *faultSink) record(b []byte) {
	now := time.Now()
	var env schemas.KvHintsEnvelope
	if _, err := env.UnmarshalMsg(b); err != nil || len(env.Actions) != 1 {
		s.t.Errorf("sink %s: undecodable envelope: %v", s.ep, err)
		return
	}
	var pl schemas.PrefetchPayload
	if _, err := pl.UnmarshalMsg(env.Actions[0].Payload); err != nil {
		s.t.Errorf("sink %s: undecodable prefetch payload: %v", s.ep, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[env.MessageID]++
	s.got = append(s.got, hintRecv{messageID: env.MessageID, requestID: pl.RequestID,
		expiresAt: time.UnixMilli(pl.ExpiresAtMs), at: now})
}

// close unbinds the socket (the worker goes down); idempotent.
func (s *faultSink) close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}

// counts returns distinct message ids and duplicates beyond the first.
func (s *faultSink) counts() (distinct, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.seen {
		distinct++
		dups += n - 1
	}
	return
}

// count is how often message id arrived.
func (s *faultSink) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id]
}

func (s *faultSink) received() []hintRecv {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hintRecv(nil), s.got...)
}

func (s *faultSink) has(requestID string) bool {
	for _, r := range s.received() {
		if r.requestID == requestID {
			return true
		}
	}
	return false
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrape reads /metrics and returns every sample by its full series name
// (`name{label="v",...}` as printed).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			out[l[:i]] = v
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return out
}

// series finds the sample of name whose labels contain every label=value
// in labels (0 when absent).
func series(m map[string]float64, name string, labels ...string) float64 {
	for k, v := range m {
		if !strings.HasPrefix(k, name) || (len(k) > len(name) && k[len(name)] != '{') {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(k, fmt.Sprintf("%s=%q", labels[i], labels[i+1])) {
				ok = false
			}
		}
		if ok {
			return v
		}
	}
	return 0
}

// rssBytes is the resident set of a process (VmRSS in /proc/<pid>/status).
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// figure logs one parseable line of results for docs/reliability.md.
func figure(t *testing.T, name string, kv ...any) {
	t.Helper()
	var b strings.Builder
	b.WriteString("FIGURE " + name)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	t.Log(b.String())
}

// durations summarises latencies: p50, p99, max, in whole milliseconds.
func durations(ds []time.Duration) (p50, p99, maxd int64) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) int64 { return ds[int(q*float64(len(ds)-1))].Milliseconds() }
	return at(0.5), at(0.99), ds[len(ds)-1].Milliseconds()
}

// wakeBody is a JSON wake-up received now.
func wakeBody(t *testing.T, id string, prompt []uint32) []byte {
	t.Helper()
	b, err := json.Marshal(wake(id, "s-"+id, prompt))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// consumerSettledFor waits until a durable has nothing pending or unacked.
func consumerSettledFor(t *testing.T, ctx context.Context, js jetstream.JetStream, durable string, within time.Duration) {
	t.Helper()
	natstest.Eventually(t, within, func() bool {
		c, err := js.Consumer(ctx, "LLM_REQUESTS", durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, "consumer %s settled", durable)
}

// alive fails the test when the child exited.
func alive(t *testing.T, p *proc) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("hintstream exited (%v)", p.cmd.ProcessState)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("hintstream gone: %v", err)
	}
}

// workerSink registers worker id (model, block size 16) with a fault
// sink as its hint endpoint, the set-up most fault tests start from.
func workerSink(t *testing.T, ctx context.Context, js jetstream.JetStream, id uint64) *faultSink {
	t.Helper()
	sink := newFaultSink(t, 0)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{sink.ep}}); err != nil {
		t.Fatal(err)
	}
	return sink
}
