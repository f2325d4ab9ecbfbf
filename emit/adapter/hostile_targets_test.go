package adapter

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
)

// TestHostileTargetAnswers: the Dynamo frontend and LMCache are called
// through the same client path as the engine (post), so a target that
// redirects off host, fails, refuses, hangs or streams an endless body
// is handled as TestHostileEngineAnswers shows for the engine: counted by
// reason, retried only for 5xx and only until the hint expires, bounded
// by the call timeout, and the prompt never sent to another host.
func TestHostileTargetAnswers(t *testing.T) {
	targets := map[string]func(url string) Config{
		TargetEngine:  func(u string) Config { return Config{Engine: EngineSGLang, EngineURL: u} },
		TargetDynamo:  func(u string) Config { return Config{PrefetchTarget: TargetDynamo, FrontendURL: u} },
		TargetLMCache: func(u string) Config { return Config{PrefetchTarget: TargetLMCache, LMCacheURL: u} },
	}
	hint := func(id string, expires time.Time) []byte {
		return prefetchBytes(t, actions.Prefetch{RequestID: id, Model: model, TokenIDs: tokens(8), WorkerID: 7, ExpiresAt: expires})
	}
	for name, cfgFor := range targets {
		t.Run(name+"/redirect off host", func(t *testing.T) {
			other := newHostileEngine(t, answerOK)
			e := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, _ *hostileEngine) {
				http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			})
			a := run(t, cfgFor(e.URL))
			push(t, pusher(t, a.Endpoint()), hint("redir", time.Now().Add(10*time.Second)))
			c := a.Counters()
			natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Failed, metrics.AdapterFailRedirected) == 1 }, "redirect refused")
			if other.calls.Load() != 0 || c.Retries.Value() != 0 {
				t.Fatalf("other host got %d calls, %d retries", other.calls.Load(), c.Retries.Value())
			}
		})
		t.Run(name+"/5xx until expiry, 4xx once", func(t *testing.T) {
			var lastStart atomic.Int64
			e := newHostileEngine(t, func(w http.ResponseWriter, _ *http.Request, _ *hostileEngine) {
				lastStart.Store(time.Now().UnixNano())
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			cfg := cfgFor(e.URL)
			cfg.RetryDelay = 10 * time.Millisecond
			a := run(t, cfg)
			expires := time.Now().Add(300 * time.Millisecond)
			push(t, pusher(t, a.Endpoint()), hint("5xx", expires))
			c := a.Counters()
			natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Dropped, metrics.AdapterDropExpired) == 1 }, "given up at expiry")
			if late := time.Unix(0, lastStart.Load()).Sub(expires); late > 0 {
				t.Fatalf("an attempt started %v after expiry", late)
			}
			if n := value(c.Failed, metrics.AdapterFailServerError); n < 2 || c.Retries.Value() != n-1 {
				t.Fatalf("server_error %d, retries %d", n, c.Retries.Value())
			}
			e4 := newHostileEngine(t, func(w http.ResponseWriter, _ *http.Request, _ *hostileEngine) {
				http.Error(w, "no", http.StatusUnprocessableEntity)
			})
			cfg = cfgFor(e4.URL)
			cfg.RetryDelay = 10 * time.Millisecond
			b := run(t, cfg)
			push(t, pusher(t, b.Endpoint()), hint("4xx", time.Now().Add(10*time.Second)))
			natstest.Eventually(t, 5*time.Second, func() bool { return value(b.Counters().Failed, metrics.AdapterFailRefused) == 1 }, "refused")
			if e4.calls.Load() != 1 || b.Counters().Retries.Value() != 0 {
				t.Fatalf("a refusal: %d calls, %d retries", e4.calls.Load(), b.Counters().Retries.Value())
			}
		})
		t.Run(name+"/hang and endless body", func(t *testing.T) {
			e := newHostileEngine(t, answerHang)
			cfg := cfgFor(e.URL)
			cfg.CallTimeout = 200 * time.Millisecond
			a := run(t, cfg)
			push(t, pusher(t, a.Endpoint()), hint("hang", time.Now().Add(10*time.Second)))
			c := a.Counters()
			natstest.Eventually(t, 5*time.Second, func() bool { return value(c.Failed, metrics.AdapterFailTimeout) == 1 }, "timed out")
			if c.Retries.Value() != 0 {
				t.Fatal("a timeout was retried")
			}
			endless := newHostileEngine(t, func(w http.ResponseWriter, r *http.Request, _ *hostileEngine) {
				w.WriteHeader(http.StatusAccepted)
				chunk := make([]byte, 32<<10)
				for r.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			})
			cfg = cfgFor(endless.URL)
			cfg.CallTimeout = 3 * time.Second
			b := run(t, cfg)
			start := time.Now()
			push(t, pusher(t, b.Endpoint()), hint("endless", time.Now().Add(10*time.Second)))
			natstest.Eventually(t, 5*time.Second, func() bool {
				return value(b.Counters().Calls, "kv.prefetch")+value(b.Counters().Failed, metrics.AdapterFailTimeout) == 1
			}, "the call ended")
			if took := time.Since(start); took > time.Second {
				t.Fatalf("an endless body held the call %v", took)
			}
		})
	}
}
