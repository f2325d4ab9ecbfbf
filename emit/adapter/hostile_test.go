package adapter

// Hostile input on the adapter (issue 35): what a sender can put on the
// hint socket and what an engine can answer. Each test drives a real
// PULL socket through a real ZeroMQ PUSH and a Go engine stand-in on
// 127.0.0.1 (net/http/httptest), and prints a FIGURE line for
// docs/reliability.md.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	zmq "github.com/pebbe/zmq4"
)

// hostileEngine is an engine stand-in whose answer the test picks. It
// counts requests and the most it saw at once.
type hostileEngine struct {
	*httptest.Server
	calls, inflight, maxInflight atomic.Int64
	bodyBytes                    atomic.Int64 // request body bytes read, all calls
	release                      chan struct{}
	releaseOnce                  sync.Once
}

func newHostileEngine(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, e *hostileEngine)) *hostileEngine {
	t.Helper()
	e := &hostileEngine{release: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		n := e.inflight.Add(1)
		defer e.inflight.Add(-1)
		for {
			m := e.maxInflight.Load()
			if n <= m || e.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		b, _ := io.Copy(io.Discard, r.Body)
		e.bodyBytes.Add(b)
		answer(w, r, e)
	}))
	// Release before Close: Close waits for handlers still blocked.
	t.Cleanup(func() { e.unblock(); e.Close() })
	return e
}

func (e *hostileEngine) unblock() { e.releaseOnce.Do(func() { close(e.release) }) }

func answerOK(w http.ResponseWriter, _ *http.Request, _ *hostileEngine) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"text":"x","meta_info":{}}`)
}

// answerHang holds the call until the client gives up or the test ends.
func answerHang(_ http.ResponseWriter, r *http.Request, e *hostileEngine) {
	select {
	case <-r.Context().Done():
	case <-e.release:
	}
}

// pusher is a raw PUSH socket connected to ep: it sends any bytes,
// valid or not.
func pusher(t *testing.T, ep string) *zmq.Socket {
	t.Helper()
	s, err := zmq.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSndtimeo(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(ep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func prefetchBytes(t *testing.T, p actions.Prefetch) []byte {
	t.Helper()
	if p.ExpiresAt.IsZero() {
		p.ExpiresAt = time.Now().Add(20 * time.Second)
	}
	b, _, err := actions.EncodePrefetch(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func push(t *testing.T, s *zmq.Socket, frames ...[]byte) {
	t.Helper()
	parts := make([]any, len(frames))
	for i, f := range frames {
		parts[i] = f
	}
	if _, err := s.SendMessage(parts...); err != nil {
		t.Fatal(err)
	}
}

// lines collects log output, safe for the adapter's goroutines.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *lines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), "msg=\""+msg+"\"")
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHostileFramesOnHintSocket: malformed and multipart frames, a
// message id sent 1,000 times, hints already expired and hints for
// another worker are each counted by reason and cost no engine call;
// the valid hint after them is still called.
func TestHostileFramesOnHintSocket(t *testing.T) {
	e := newHostileEngine(t, answerOK)
	logs := &lines{}
	a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, WorkerID: 7}, WithLogger(logs.logger()))
	s := pusher(t, a.Endpoint())
	malformed := [][]byte{
		{}, {0xc1}, []byte("not msgpack at all"), {0x81, 0xa1, 'a'}, // empty, never-used byte, text, truncated map
		{0xdf, 0xff, 0xff, 0xff, 0xff}, // a map claiming 2^32-1 entries in 5 bytes
		{0xdd, 0x7f, 0xff, 0xff, 0xff}, // an array claiming 2^31 elements
		prefetchBytes(t, actions.Prefetch{RequestID: "cut", TokenIDs: tokens(64)})[:40],           // cut short
		append(prefetchBytes(t, actions.Prefetch{RequestID: "trail", TokenIDs: tokens(8)}), 0x00), // trailing byte
		[]byte(`{"protocol_version":"0.1","message_id":"json","actions":[]}`),                     // JSON, not msgpack
	}
	for _, m := range malformed {
		push(t, s, m)
	}
	// Multipart: the receiver reads each part as a message of its own.
	push(t, s, []byte{0xc1}, []byte("second part"))
	const dups = 1000
	dup := prefetchBytes(t, actions.Prefetch{RequestID: "dup", TokenIDs: tokens(16), WorkerID: 7})
	for range dups {
		push(t, s, dup)
	}
	push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "expired", TokenIDs: tokens(8), ExpiresAt: time.Now().Add(-time.Second)}))
	push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "expired-1970", TokenIDs: tokens(8), ExpiresAt: time.UnixMilli(1)}))
	push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "other", TokenIDs: tokens(8), WorkerID: 9}))
	push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "last", TokenIDs: tokens(8), WorkerID: 7}))
	sent := uint64(len(malformed) + 2 + dups + 4)
	rc := a.ReceiverCounters()
	// "last" is sent after the rest and called after them: once it is,
	// every outcome is counted.
	natstest.Eventually(t, 10*time.Second, func() bool { return rc.Received.Value() == sent && value(a.Counters().Calls, "kv.prefetch") >= 2 },
		"every frame read, the valid hints called")
	natstest.Eventually(t, 5*time.Second, func() bool { return uint64(e.calls.Load()) == value(a.Counters().Calls, "kv.prefetch") }, "calls settled")
	if got, want := rc.Invalid.Value(), uint64(len(malformed)+2); got != want {
		t.Errorf("invalid %d, want %d", got, want)
	}
	if got := rc.Duplicate.Value(); got != dups-1 {
		t.Errorf("duplicates %d, want %d", got, dups-1)
	}
	if got := rc.Expired.Value(); got != 2 {
		t.Errorf("expired %d, want 2", got)
	}
	if got := rc.OtherWorker.Value(); got != 1 {
		t.Errorf("other_worker %d, want 1", got)
	}
	if got := e.calls.Load(); got != 2 {
		t.Errorf("engine saw %d calls, want 2 (dup once, last)", got)
	}
	// 11 invalid: logged at the 1st, 2nd, 4th and 8th.
	if got := logs.count("hint rejected"); got != 4 {
		t.Errorf("%d 'hint rejected' lines for %d invalid, want 4", got, rc.Invalid.Value())
	}
	t.Logf("FIGURE hostile frames: %d frames read; %d invalid (%d log lines), %d duplicates, %d expired, %d other_worker; %d engine calls",
		rc.Received.Value(), rc.Invalid.Value(), logs.count("hint rejected"), rc.Duplicate.Value(), rc.Expired.Value(), rc.OtherWorker.Value(), e.calls.Load())
}

// TestHostileEngineAnswers: an engine that hangs, redirects, refuses,
// fails or streams an endless body costs at most one call slot for a
// bounded time, is counted by reason, is never retried past the hint's
// expiry, and never sends the prompt to another host.
func TestHostileEngineAnswers(t *testing.T) {
	t.Run("hang", func(t *testing.T) {
		e := newHostileEngine(t, answerHang)
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: 1, QueueSize: 4, CallTimeout: 300 * time.Millisecond})
		s := pusher(t, a.Endpoint())
		start := time.Now()
		push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "hang-0", TokenIDs: tokens(8)}))
		natstest.Eventually(t, 5*time.Second, func() bool { return e.inflight.Load() == 1 }, "the call hangs")
		// While the only slot hangs, the socket keeps draining.
		const more = 100
		for i := range more {
			push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: fmt.Sprintf("hang-%d", i+1), TokenIDs: tokens(8)}))
		}
		natstest.Eventually(t, 2*time.Second, func() bool { return a.ReceiverCounters().Received.Value() == more+1 }, "all read while the call hangs")
		read := time.Since(start)
		c := a.Counters()
		natstest.Eventually(t, 10*time.Second, func() bool { return value(c.Failed, metrics.AdapterFailTimeout) >= 1 }, "the hung call timed out")
		took := time.Since(start)
		if c.Retries.Value() != 0 {
			t.Fatalf("a timed-out call was retried %d times", c.Retries.Value())
		}
		if full := value(c.Dropped, metrics.AdapterDropQueueFull); value(c.Accepted, "kv.prefetch")+full != more+1 || full == 0 {
			t.Fatalf("accepted %d + queue_full %d, want %d", value(c.Accepted, "kv.prefetch"), full, more+1)
		}
		t.Logf("FIGURE engine hangs: %d hints read in %v while the one slot hung; first timeout after %v (call timeout 300ms), 0 retries; %d queue_full",
			more+1, read.Round(time.Millisecond), took.Round(time.Millisecond), value(c.Dropped, metrics.AdapterDropQueueFull))
	})

	t.Run("flood of 10x max-inflight", func(t *testing.T) {
		e := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, e *hostileEngine) {
			answerHang(w, r, e)
			answerOK(w, r, e)
		})
		const inflight, queue = 4, 16
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: inflight, QueueSize: queue})
		s := pusher(t, a.Endpoint())
		c := a.Counters()
		const n = 10 * inflight
		start := time.Now()
		for i := range n {
			push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: fmt.Sprintf("flood-%d", i), TokenIDs: tokens(32)}))
			if i == inflight-1 {
				// The first four must hold every call slot before the rest
				// arrive; on a loaded machine the callers may not yet have
				// taken them off the queue, and the count below would be
				// off by however many are still queued.
				natstest.Eventually(t, 5*time.Second, func() bool { return e.inflight.Load() == inflight }, "the engine holds %d calls", inflight)
			}
		}
		natstest.Eventually(t, 2*time.Second, func() bool {
			return value(c.Accepted, "kv.prefetch")+value(c.Dropped, metrics.AdapterDropQueueFull) == n
		}, "every hint read and judged while the engine holds the calls")
		read := time.Since(start)
		acc, full := value(c.Accepted, "kv.prefetch"), value(c.Dropped, metrics.AdapterDropQueueFull)
		if acc != inflight+queue || full != n-inflight-queue {
			t.Fatalf("accepted %d, queue_full %d; want %d and %d", acc, full, inflight+queue, n-inflight-queue)
		}
		e.unblock()
		natstest.Eventually(t, 10*time.Second, func() bool { return value(c.Calls, "kv.prefetch") == acc }, "every accepted hint called")
		if m := e.maxInflight.Load(); m > inflight {
			t.Fatalf("engine saw %d calls at once, cap %d", m, inflight)
		}
		t.Logf("FIGURE flood of %d hints at --max-inflight %d, --queue-size %d: all read in %v; %d called (at most %d at once), %d dropped queue_full",
			n, inflight, queue, read.Round(time.Millisecond), acc, e.maxInflight.Load(), full)
	})

	t.Run("redirect", func(t *testing.T) {
		other := newHostileEngine(t, answerOK)
		e := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, _ *hostileEngine) {
			switch r.URL.Path {
			case "/generate":
				http.Redirect(w, r, other.URL+"/generate", http.StatusTemporaryRedirect)
			case "/here":
				answerOK(w, r, nil)
			}
		})
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL})
		s := pusher(t, a.Endpoint())
		push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "redir", TokenIDs: tokens(8)}))
		c := a.Counters()
		natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Failed, metrics.AdapterFailRedirected) == 1 }, "redirect refused")
		if n := other.calls.Load(); n != 0 {
			t.Fatalf("the other host got %d calls", n)
		}
		if c.Retries.Value() != 0 {
			t.Fatal("a redirected call was retried")
		}
		// A redirect on the engine's own host is followed.
		same := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, _ *hostileEngine) {
			if r.URL.Path == "/generate" {
				http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
				return
			}
			answerOK(w, r, nil)
		})
		b := run(t, Config{Engine: EngineSGLang, EngineURL: same.URL})
		push(t, pusher(t, b.Endpoint()), prefetchBytes(t, actions.Prefetch{RequestID: "redir-same", TokenIDs: tokens(8)}))
		natstest.Eventually(t, 5*time.Second, func() bool { return value(b.Counters().Calls, "kv.prefetch") == 1 }, "same-host redirect followed")
		t.Logf("FIGURE engine redirects off host: 0 calls reached the other host, 1 counted redirected, 0 retries; a same-host 307 followed (%d calls)", same.calls.Load())
	})

	t.Run("4xx and 5xx", func(t *testing.T) {
		var mu sync.Mutex
		var lastStart time.Time
		e := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, _ *hostileEngine) {
			mu.Lock()
			lastStart = time.Now()
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, RetryDelay: 10 * time.Millisecond})
		s := pusher(t, a.Endpoint())
		expires := time.Now().Add(400 * time.Millisecond)
		push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "5xx", TokenIDs: tokens(8), ExpiresAt: expires}))
		c := a.Counters()
		natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Dropped, metrics.AdapterDropExpired) == 1 }, "given up at expiry")
		mu.Lock()
		late := lastStart.Sub(expires)
		mu.Unlock()
		if late > 0 {
			t.Fatalf("an attempt started %v after the hint expired", late)
		}
		attempts := value(c.Failed, metrics.AdapterFailServerError)
		if attempts < 2 || c.Retries.Value() != attempts-1 {
			t.Fatalf("server_error %d, retries %d", attempts, c.Retries.Value())
		}
		for _, code := range []int{400, 404, 413, 422, 429} {
			e4 := newHostileEngine(t, func(w http.ResponseWriter, _ *http.Request, _ *hostileEngine) {
				http.Error(w, strings.Repeat("no ", 10_000), code) // a long body: only 512 bytes logged
			})
			b := run(t, Config{Engine: EngineSGLang, EngineURL: e4.URL, RetryDelay: 10 * time.Millisecond})
			push(t, pusher(t, b.Endpoint()), prefetchBytes(t, actions.Prefetch{RequestID: "4xx", TokenIDs: tokens(8)}))
			natstest.Eventually(t, 5*time.Second, func() bool { return value(b.Counters().Failed, metrics.AdapterFailRefused) == 1 }, "%d refused", code)
			if n := e4.calls.Load(); n != 1 || b.Counters().Retries.Value() != 0 {
				t.Fatalf("%d: %d calls, %d retries: a refusal was retried", code, n, b.Counters().Retries.Value())
			}
		}
		t.Logf("FIGURE engine 4xx/5xx: 503 tried %d times within a 400 ms expiry, last attempt %v before it, then dropped expired; 400/404/413/422/429 each 1 call, counted refused, 0 retries",
			attempts, (-late).Round(time.Millisecond))
	})

	t.Run("endless body", func(t *testing.T) {
		var written atomic.Int64
		e := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, e *hostileEngine) {
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 32<<10)
			for r.Context().Err() == nil {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: 1, CallTimeout: 3 * time.Second})
		s := pusher(t, a.Endpoint())
		start := time.Now()
		push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "endless", TokenIDs: tokens(8)}))
		c := a.Counters()
		natstest.Eventually(t, 10*time.Second, func() bool {
			return value(c.Calls, "kv.prefetch")+value(c.Failed, metrics.AdapterFailTimeout) == 1
		}, "the call ended")
		took := time.Since(start)
		if took > time.Second {
			t.Fatalf("an endless body held the call slot %v (call timeout 3s)", took)
		}
		t.Logf("FIGURE engine streams an endless body: call slot freed after %v (call timeout 3s), %d KiB read at most (the rest refused by closing; the engine wrote %d KiB into the socket buffers)",
			took.Round(time.Millisecond), (maxErrorBody+maxDrainBody)>>10, written.Load()>>10)
	})
}

// TestHostileSizes: a 10^6-token prompt is carried out; 12 of them at
// an engine that hangs hold at most QueueTokens of ids in the heap, not
// 12 x 4 MB; a message over MaxMessageBytes is refused by ZeroMQ before
// it is allocated, and the socket goes on.
func TestHostileSizes(t *testing.T) {
	const million = 1_000_000
	big := tokens(million)
	t.Run("one 10^6-token prompt", func(t *testing.T) {
		e := newHostileEngine(t, answerOK)
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL})
		msg := prefetchBytes(t, actions.Prefetch{RequestID: "million", TokenIDs: big})
		start := time.Now()
		push(t, pusher(t, a.Endpoint()), msg)
		natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "the million-token call")
		t.Logf("FIGURE 10^6-token prompt: a %.1f MB message, called in %v with a %.1f MB body",
			float64(len(msg))/1e6, time.Since(start).Round(time.Millisecond), float64(e.bodyBytes.Load())/1e6)
	})

	t.Run("12 of them at a hung engine", func(t *testing.T) {
		e := newHostileEngine(t, answerHang)
		const n = 12 // > the 8 QueueTokens holds; kept small for -race
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxInflight: 1})
		s := pusher(t, a.Endpoint())
		c := a.Counters()
		before := heapInuse()
		for i := range n { // each message is garbage once sent: only the adapter's copies stay
			push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: fmt.Sprintf("big-%d", i), TokenIDs: big}))
		}
		natstest.Eventually(t, 20*time.Second, func() bool {
			return value(c.Accepted, "kv.prefetch")+value(c.Dropped, metrics.AdapterDropQueueFull) == n
		}, "all read and judged")
		natstest.Eventually(t, 5*time.Second, func() bool { return e.inflight.Load() == 1 }, "one call hangs")
		grown := int64(heapInuse()) - int64(before)
		acc, full := value(c.Accepted, "kv.prefetch"), value(c.Dropped, metrics.AdapterDropQueueFull)
		// Held: QueueTokens of ids (4 B each, 32 MiB) and the call's
		// JSON body (~8 B a token here, 7.8 MB).
		const bound = 48 << 20
		if acc+full != n || acc > DefaultQueueTokens/million || grown > bound {
			t.Fatalf("accepted %d, queue_full %d, heap grew %d MiB (bound %d MiB)", acc, full, grown>>20, bound>>20)
		}
		e.unblock()
		t.Logf("FIGURE 12 x 10^6-token prompts, engine hung: %d queued (QueueTokens %d), %d dropped queue_full; heap +%d MiB (bound %d MiB)",
			acc, DefaultQueueTokens, full, grown>>20, bound>>20)
	})

	t.Run("message over MaxMessageBytes", func(t *testing.T) {
		e := newHostileEngine(t, answerOK)
		a := run(t, Config{Engine: EngineSGLang, EngineURL: e.URL, MaxMessageBytes: 1 << 20})
		s := pusher(t, a.Endpoint())
		huge := make([]byte, 64<<20) // 64 MiB of zeros
		before := totalAlloc()
		push(t, s, huge)
		push(t, pusher(t, a.Endpoint()), prefetchBytes(t, actions.Prefetch{RequestID: "beside-huge", TokenIDs: tokens(8)}))
		natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 1 }, "a hint from another sender")
		// One sender's messages arrive in order: once the hint sent after
		// the huge one on the same socket (after its reconnect) is called,
		// the huge one was refused or read.
		push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "after-huge", TokenIDs: tokens(8)}))
		natstest.Eventually(t, 10*time.Second, func() bool { return value(a.Counters().Calls, "kv.prefetch") == 2 }, "the hint after it")
		alloc := totalAlloc() - before
		rc := a.ReceiverCounters()
		if rc.Received.Value() != 2 || alloc > 16<<20 {
			t.Fatalf("received %d (want the 2 valid ones), %d MiB allocated", rc.Received.Value(), alloc>>20)
		}
		t.Logf("FIGURE 64 MiB message, --max-message-bytes 1 MiB: its sender disconnected, %d messages read (the valid ones), %d MiB allocated meanwhile",
			rc.Received.Value(), alloc>>20)
	})
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestHostileFarFutureExpiry: a prefetch claiming to expire a year from
// now, to a vLLM engine that answers 503 to everything. The adapter
// retries it only for MaxHintLife, then drops it as expired, and the
// set_priority TTL it sent is the configured prefetch TTL, not a year.
// Before MaxHintLife the retries went on for the year and ttl_seconds
// was 3.2e7.
func TestHostileFarFutureExpiry(t *testing.T) {
	var mu sync.Mutex
	var ttls []float64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			KVHints struct {
				Actions []struct {
					Payload struct {
						TTLSeconds float64 `json:"ttl_seconds"`
					} `json:"payload"`
				} `json:"actions"`
			} `json:"kv_hints"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil && len(body.KVHints.Actions) == 1 {
			mu.Lock()
			ttls = append(ttls, body.KVHints.Actions[0].Payload.TTLSeconds)
			mu.Unlock()
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	const life, prefetchTTL = 400 * time.Millisecond, 90 * time.Second
	a := run(t, Config{Engine: EngineVLLM, EngineURL: srv.URL, Model: model, MaxHintLife: life,
		PrefetchTTL: prefetchTTL, RetryDelay: 20 * time.Millisecond})
	s := pusher(t, a.Endpoint())
	start := time.Now()
	push(t, s, prefetchBytes(t, actions.Prefetch{RequestID: "far", SessionID: "s", TokenIDs: tokens(8),
		ExpiresAt: time.Now().AddDate(1, 0, 0)}))
	c := a.Counters()
	natstest.Eventually(t, 10*time.Second, func() bool { return value(c.Dropped, metrics.AdapterDropExpired) == 1 },
		"the far-future prefetch given up within MaxHintLife")
	took := time.Since(start)
	if c.FarFuture.Value() != 1 {
		t.Fatalf("far_future %d, want 1", c.FarFuture.Value())
	}
	if c.Retries.Value() == 0 {
		t.Fatal("no retry of a 503 within MaxHintLife")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ttl := range ttls {
		if ttl != prefetchTTL.Seconds() {
			t.Fatalf("ttl_seconds %v, want the prefetch TTL %v", ttl, prefetchTTL.Seconds())
		}
	}
	t.Logf("FIGURE far-future expiry: given up after %v (max hint life %v), %d retries, ttl_seconds %v",
		took.Round(time.Millisecond), life, c.Retries.Value(), prefetchTTL.Seconds())
}
