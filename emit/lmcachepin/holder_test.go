package lmcachepin_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/emit/lmcachepin"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Timings short enough for a test, in the proportions of a deployment:
// re-pins well inside LMCache's pin timeout (stretched on a slow run).
var (
	testRepin      = natstest.Within(150 * time.Millisecond)
	testPinTimeout = natstest.Within(400 * time.Millisecond)
)

func newHolder(t *testing.T, url string, store lmcachepin.Store, cfg lmcachepin.Config) (*lmcachepin.Holder, *metrics.LMCachePins) {
	t.Helper()
	cfg.URL = url
	if cfg.Repin == 0 {
		cfg.Repin = testRepin
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 100 * time.Millisecond
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 10 * time.Millisecond
	}
	f := metrics.New()
	h, err := lmcachepin.New(cfg, store, lmcachepin.WithLogger(quiet()), lmcachepin.WithCounters(&f.LMCachePins))
	if err != nil {
		t.Fatal(err)
	}
	return h, &f.LMCachePins
}

func prompt(n int) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = uint32(i*7919) % 152064
	}
	return ts
}

// A held pin is pinned at once with the controller's exact body (the
// instance from the template, the location, the tokens, nothing else),
// pinned again while its deadline lasts, so it outlives LMCache's pin
// timeout; at the deadline it lapses: no more calls, its record gone,
// and LMCache lets it go within the pin timeout.
func TestHoldRepinsUntilDeadlineThenLapses(t *testing.T) {
	c := standin.NewLMCacheController(testPinTimeout, "vllm-7-1")
	t.Cleanup(c.Close)
	store := lmcachepin.NewMemStore()
	h, n := newHolder(t, c.URL, store, lmcachepin.Config{Instance: "vllm-{worker_id}-{dp_rank}"})
	natstest.Run(t, h.Run)
	toks := prompt(300)
	until := time.Now().Add(3 * testPinTimeout)
	if !h.Hold(context.Background(), pins.TokenPin{Slot: "session:s", Trigger: "r1", Worker: schemas.WorkerRecord{WorkerID: 7},
		DpRank: 1, Tokens: toks, Until: until}) {
		t.Fatal("not held")
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return len(c.Pins()) >= 1 }, "first /pin")
	first := c.Pins()[0]
	if first.Instance != "vllm-7-1" || first.Location != lmcachepin.DefaultLocation || !slices.Equal(first.Tokens, toks) || len(first.Unknown) != 0 {
		t.Fatalf("first /pin %+v", first)
	}
	// Past LMCache's own timeout, the pin is still held: pinned again.
	natstest.Eventually(t, 5*time.Second, func() bool {
		ps := c.Pins()
		return ps[len(ps)-1].At.After(first.At.Add(testPinTimeout))
	}, "a /pin past LMCache's pin timeout")
	natstest.Eventually(t, 5*time.Second, func() bool { return n.Lapsed.Value() == 1 }, "the pin lapsed")
	calls := len(c.Pins())
	if calls < 3 {
		t.Fatalf("%d /pin calls over the pin's life, want re-pins", calls)
	}
	if last := c.Pins()[calls-1].At; last.After(until) {
		t.Fatalf("a /pin at %v, past the deadline %v", last, until)
	}
	if _, ok, _ := store.Get(context.Background(), "session:s"); ok || h.Held() != 0 {
		t.Fatal("lapsed pin still recorded or held")
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return !c.Pinned("vllm-7-1", toks) }, "LMCache let the pin go")
	if len(c.Pins()) != calls || n.Calls.Value(metrics.LMCachePinOK) != uint64(calls) {
		t.Fatalf("calls after lapse: %d then %d; ok %d", calls, len(c.Pins()), n.Calls.Value(metrics.LMCachePinOK))
	}
}

// The tool returns: Release deletes the record and the pin is pinned no
// more, so LMCache lets it go within its timeout, long before the
// deadline. A release naming an older trigger does nothing.
func TestReleaseEndsThePin(t *testing.T) {
	c := standin.NewLMCacheController(testPinTimeout, lmcachepin.DefaultInstance)
	t.Cleanup(c.Close)
	store := lmcachepin.NewMemStore()
	h, n := newHolder(t, c.URL, store, lmcachepin.Config{})
	natstest.Run(t, h.Run)
	toks := prompt(64)
	ctx := context.Background()
	h.Hold(ctx, pins.TokenPin{Slot: "session:s", Trigger: "r2", Tokens: toks, Until: time.Now().Add(time.Minute)})
	natstest.Eventually(t, 5*time.Second, func() bool { return len(c.Pins()) >= 2 }, "pinned and re-pinned")
	h.Release(ctx, "session:s", "r1") // an older pin's release
	if n.Released.Value() != 0 || h.Held() != 1 {
		t.Fatal("an older trigger's release let go of the new pin")
	}
	h.Release(ctx, "session:s", "r2")
	if n.Released.Value() != 1 || h.Held() != 0 {
		t.Fatalf("released %d, held %d", n.Released.Value(), h.Held())
	}
	if _, ok, _ := store.Get(ctx, "session:s"); ok {
		t.Fatal("released pin still recorded")
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return !c.Pinned(lmcachepin.DefaultInstance, toks) }, "LMCache let the pin go")
	// A witness pin in another slot, held from now on: once it has been
	// pinned again twice, two re-pin rounds have run since the release,
	// and in neither was the released prompt pinned.
	calls := len(c.Pins())
	other := prompt(32)
	h.Hold(ctx, pins.TokenPin{Slot: "session:w", Trigger: "w1", Tokens: other, Until: time.Now().Add(time.Minute)})
	natstest.Eventually(t, 5*time.Second, func() bool { return countPins(c.Pins()[calls:], other) >= 3 }, "the witness re-pinned twice")
	if n := countPins(c.Pins()[calls:], toks); n != 0 {
		t.Fatalf("the released prompt pinned again %d times after the release", n)
	}
}

// countPins is how many of calls pinned exactly toks.
func countPins(calls []standin.LMCachePin, toks []uint32) int {
	n := 0
	for _, p := range calls {
		if slices.Equal(p.Tokens, toks) {
			n++
		}
	}
	return n
}

// controllerAndStores is a controller stand-in for the default instance
// and n members' stores over one embedded JetStream bucket.
func controllerAndStores(t *testing.T, n int) (*standin.LMCacheController, []lmcachepin.Store) {
	t.Helper()
	c := standin.NewLMCacheController(testPinTimeout, lmcachepin.DefaultInstance)
	t.Cleanup(c.Close)
	_, js := natstest.Connect(t, natstest.Start(t))
	stores := make([]lmcachepin.Store, n)
	for i := range stores {
		s, err := lmcachepin.OpenKVStore(context.Background(), js, "")
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	return c, stores
}

// A member releases a pin another member holds (the next turn reached
// it): the holder finds the record gone at its next re-pin and stops.
func TestReleaseByAnotherMember(t *testing.T) {
	c, stores := controllerAndStores(t, 2)
	ctx := context.Background()
	a, _ := newHolder(t, c.URL, stores[0], lmcachepin.Config{})
	b, nb := newHolder(t, c.URL, stores[1], lmcachepin.Config{})
	natstest.Run(t, a.Run)
	a.Hold(ctx, pins.TokenPin{Slot: "session:x", Trigger: "r", Tokens: prompt(32), Until: time.Now().Add(time.Minute)})
	natstest.Eventually(t, 5*time.Second, func() bool { return len(c.Pins()) >= 1 }, "pinned")
	b.Release(ctx, "session:x", "r")
	if nb.Released.Value() != 1 {
		t.Fatal("not released")
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return a.Held() == 0 }, "the holder let go")
}

// A restart: the store holds a pin past its deadline and one still due.
// The new holder deletes the lapsed one without a call and pins the due
// one again at once, with the tokens it recorded.
func TestRestartForgetsLapsedResumesLive(t *testing.T) {
	c, stores := controllerAndStores(t, 1)
	store := stores[0]
	ctx := context.Background()
	// The first hintstream holds both, then dies without a word.
	first, _ := newHolder(t, c.URL, store, lmcachepin.Config{})
	live, gone := prompt(40), prompt(20)
	first.Hold(ctx, pins.TokenPin{Slot: "session:live", Trigger: "a", Tokens: live, Until: time.Now().Add(time.Minute)})
	first.Hold(ctx, pins.TokenPin{Slot: "session:gone", Trigger: "b", Tokens: gone, Until: time.Now().Add(50 * time.Millisecond)})
	natstest.Eventually(t, 5*time.Second, func() bool {
		r, ok, _ := store.Get(ctx, "session:gone")
		return ok && time.Now().After(time.UnixMilli(r.UntilMs))
	}, "the short pin's deadline passed while no hintstream ran")
	if n := len(c.Pins()); n != 0 {
		t.Fatalf("%d calls before any Run", n)
	}
	second, n := newHolder(t, c.URL, store, lmcachepin.Config{})
	natstest.Run(t, second.Run)
	natstest.Eventually(t, 5*time.Second, func() bool { return len(c.Pins()) >= 1 }, "the live pin pinned again")
	if call := c.Pins()[0]; !slices.Equal(call.Tokens, live) {
		t.Fatalf("resumed /pin tokens %v", call.Tokens)
	}
	if n.Lapsed.Value() != 1 || n.Held.Value() != 1 || second.Held() != 1 {
		t.Fatalf("lapsed %d held %d (%d)", n.Lapsed.Value(), n.Held.Value(), second.Held())
	}
	if _, ok, _ := store.Get(ctx, "session:gone"); ok {
		t.Fatal("lapsed pin still recorded")
	}
	for _, call := range c.Pins() {
		if slices.Equal(call.Tokens, gone) {
			t.Fatal("the lapsed pin was pinned again")
		}
	}
}

// Bad answers are met as the adapter meets an engine's: a 4xx is not
// retried, a 5xx and an unknown instance are retried until the call's
// deadline, a hang is cut at the call timeout, a redirect off host is not
// followed, an endless body costs a bounded read; each counted by outcome.
func TestHostileController(t *testing.T) {
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request) bool
		outcome string
		retried bool
	}{
		{"422", func(w http.ResponseWriter, _ *http.Request) bool { http.Error(w, "no", 422); return true }, metrics.AdapterFailRefused, false},
		{"500", func(w http.ResponseWriter, _ *http.Request) bool { http.Error(w, "down", 500); return true }, metrics.LMCachePinExpired, true},
		{"hang", func(_ http.ResponseWriter, r *http.Request) bool {
			select {
			case <-r.Context().Done():
			case <-time.After(natstest.Within(10 * time.Second)):
			}
			return true
		}, metrics.AdapterFailTimeout, false},
		{"redirect", func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, "http://192.0.2.1:9/pin", http.StatusTemporaryRedirect)
			return true
		}, metrics.AdapterFailRedirected, false},
		{"endless", func(w http.ResponseWriter, _ *http.Request) bool {
			w.WriteHeader(200)
			chunk := []byte(strings.Repeat("x", 4096))
			for range 1 << 14 { // 64 MiB if read to the end
				if _, err := w.Write(chunk); err != nil {
					break
				}
			}
			return true
		}, metrics.LMCachePinOK, false},
		{"unknown instance", nil, metrics.LMCachePinExpired, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := standin.NewLMCacheController(testPinTimeout, "known")
			t.Cleanup(c.Close)
			c.SetAnswer(tc.answer)
			// A call timeout a loaded machine's 500 never meets, but for
			// the hang, whose call it cuts.
			cfg := lmcachepin.Config{Instance: "known", Repin: 10 * time.Second, CallTimeout: 5 * time.Second}
			if tc.answer == nil {
				cfg.Instance = "unknown"
			}
			if tc.outcome == metrics.AdapterFailTimeout {
				cfg.CallTimeout = 200 * time.Millisecond
			}
			h, n := newHolder(t, c.URL, lmcachepin.NewMemStore(), cfg)
			natstest.Run(t, h.Run)
			start := time.Now()
			h.Hold(context.Background(), pins.TokenPin{Slot: "s", Trigger: "t", Tokens: prompt(16), Until: time.Now().Add(400 * time.Millisecond)})
			natstest.Eventually(t, 5*time.Second, func() bool { return n.Calls.Value(tc.outcome) == 1 }, "outcome %s", tc.outcome)
			if took := time.Since(start); took > natstest.Within(6*time.Second) {
				t.Fatalf("the call took %v", took)
			}
			if got := n.Retries.Value() > 0; got != tc.retried {
				t.Fatalf("retries %d, want retried %v", n.Retries.Value(), tc.retried)
			}
		})
	}
}
