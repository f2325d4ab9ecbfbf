package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// aheadFor returns the header-free kv.prefetch payloads the peer decoded
// for a session, with the endpoint each came to.
func aheadFor(ms []pypeer.Received, session string) (pls []map[string]any, eps []string) {
	for _, m := range ms {
		acts, _ := m.Envelope["actions"].([]any)
		for _, a := range acts {
			am := a.(map[string]any)
			pl, _ := am["payload"].(map[string]any)
			id, _ := pl["request_id"].(string)
			if am["action_type"] == "kv.prefetch" && pl["session_id"] == session && strings.HasPrefix(id, "ahead-") {
				pls, eps = append(pls, pl), append(eps, m.Endpoint)
			}
		}
	}
	return pls, eps
}

// storedApplied is publishStored, waiting until hintstream applied it
// (the KV-event stream is consumed apart from the requests).
func storedApplied(t *testing.T, ctx context.Context, js jetstream.JetStream, addr string, worker uint64, tokens []uint32) {
	t.Helper()
	before := series(scrape(t, addr), "hintstream_kv_events_applied_total", "kind", "stored")
	publishStored(t, ctx, js, worker, tokens)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, addr), "hintstream_kv_events_applied_total", "kind", "stored") > before
	}, "worker %d's KV event not applied", worker)
}

// waitMetrics scrapes into *m until cond holds, for at most within.
func waitMetrics(t *testing.T, addr string, within time.Duration, m *map[string]float64, cond func() bool) bool {
	t.Helper()
	ok, deadline := false, time.Now().Add(within)
	natstest.Eventually(t, within+5*time.Second, func() bool {
		*m = scrape(t, addr)
		ok = cond()
		return ok || time.Now().After(deadline)
	}, "scraping")
	return ok
}

// aheadSeries are the header-free prefetch series of m that are not 0.
func aheadSeries(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "hintstream_ahead") && v != 0 {
			out[k] = v
		}
	}
	return out
}

// rhythm publishes a session's five turns a minute apart, each answered
// on worker 2 a second later, stamped so that the next turn is due about
// four seconds from now (room for a loaded machine to consume the turns
// before the prefetch is due); prompt grows by a block a turn.
func rhythm(t *testing.T, publish func(schemas.RequestEvent, schemas.ResponseEvent), session string, base uint32) []uint32 {
	t.Helper()
	now := time.Now()
	lastResp := now.Add(-55 * time.Second) // gaps of 59 s from a response to the next turn
	var prompt []uint32
	for k := range 5 {
		at := lastResp.Add(-time.Duration(4-k) * time.Minute).Add(-time.Second)
		prompt = seq(base, 16*(4+k))
		id := session + "-" + strconv.Itoa(k)
		publish(schemas.RequestEvent{RequestID: id, SessionID: session, Model: model, TokenIDs: prompt, ReceivedAtMs: at.UnixMilli()},
			schemas.ResponseEvent{RequestID: id, SessionID: session, Model: model, WorkerID: 2, FinishReason: "stop",
				CompletedAtMs: at.Add(time.Second).UnixMilli()})
	}
	return prompt
}

// TestHeaderFreePrefetch: the real binary with --prefetch-ahead, a real
// nats-server and an independent Python ZMQ peer as the workers. A
// session whose turns come a minute apart gets a kv.prefetch of its last
// prompt, with no wake-up header, before its next turn is due, at the
// worker the router picks for that prompt (the one caching it), and that
// worker is recorded under the session in the affinity bucket; the turn
// landing there counts the prefetch's bytes as used. Sessions whose
// predicted turns never come waste their prefetches; none is sent that
// could take the waste past --max-prefetch-waste × used plus the warm-up
// allowance (stopped ones are counted).
func TestHeaderFreePrefetch(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sink := pypeer.StartSink(t, 2)
	eps := sink.Endpoints()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[id-1]}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	const kvBytes = 1000
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--http-addr", addr, "--prefetch-ahead",
		"--max-prefetch-waste", "1", "--prefetch-ahead-warmup", "64", "--kv-bytes-per-token", strconv.Itoa(kvBytes))
	p.waitLine(t, 30*time.Second, "hintstream running")
	publish := func(r schemas.RequestEvent, resp schemas.ResponseEvent) {
		publishRequest(t, ctx, js, r)
		publishResponse(t, ctx, js, resp)
	}

	// Worker 2 caches the first half of the session's prompt: the router
	// would pick it, and the rest is worth loading.
	storedApplied(t, ctx, js, addr, 2, seq(1000, 16*4))
	prompt := rhythm(t, publish, "regular", 1000)
	nextDue := time.Now().Add(4 * time.Second)
	var pls []map[string]any
	var got []string
	sink.WaitFor(t, 15*time.Second, func(ms []pypeer.Received) bool {
		pls, got = aheadFor(ms, "regular")
		return len(pls) > 0
	}, "no header-free prefetch for the regular session")
	if time.Now().After(nextDue.Add(time.Second)) {
		t.Fatalf("the prefetch came %v after the turn was due", time.Since(nextDue))
	}
	pl := pls[0]
	toks, _ := pl["token_ids"].([]any)
	n, _ := pl["expires_at_ms"].(json.Number)
	exp, _ := n.Int64()
	if got[0] != eps[1] || len(toks) != len(prompt) || pl["model"] != model || time.UnixMilli(exp).Before(nextDue) {
		t.Fatalf("prefetch %v to %s (want worker 2's %s, %d tokens, expiring after %v)", pl, got[0], eps[1], len(prompt), nextDue)
	}
	aff, err := client.OpenAffinity(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	var pref client.Preferred
	natstest.Eventually(t, 5*time.Second, func() bool {
		pref, err = aff.PreferredWorker(ctx, "regular")
		return err == nil
	}, "no affinity record for the session: %v", err)
	if pref.WorkerID != 2 || pref.RequestID != pl["request_id"] {
		t.Fatalf("preferred %+v, want worker 2 from %v", pref, pl["request_id"])
	}
	// Worker 2 loads the prefetch and says so in its KV events, as a
	// worker does; then the turn comes and runs on worker 2: the prefetch
	// was used (the half it loaded; the other half was on the device).
	storedApplied(t, ctx, js, addr, 2, prompt)
	publish(schemas.RequestEvent{RequestID: "regular-5", SessionID: "regular", Model: model, TokenIDs: seq(1000, 16*9),
		ReceivedAtMs: time.Now().UnixMilli()},
		schemas.ResponseEvent{RequestID: "regular-5", SessionID: "regular", Model: model, WorkerID: 2, FinishReason: "stop",
			CompletedAtMs: time.Now().Add(time.Second).UnixMilli()})
	used := float64(len(prompt) / 2 * kvBytes)
	var m map[string]float64
	if !waitMetrics(t, addr, 10*time.Second, &m, func() bool { return series(m, "hintstream_ahead_used_bytes_total") == used }) {
		t.Fatalf("used bytes not counted: %v", aheadSeries(m))
	}

	// Three sessions whose predicted turns never come, due together, each
	// loading a whole prompt (no worker holds any of it): the budget
	// (used + the warm-up of half a prompt, in flight counted as wasted)
	// lets the first go and stops the other two (counted). Its prefetch
	// expires unused and is counted wasted: the waste stays within the
	// budget.
	for i := range 3 {
		rhythm(t, publish, "silent-"+strconv.Itoa(i), uint32(5000+1000*i))
	}
	natstest.Eventually(t, 15*time.Second, func() bool {
		return series(scrape(t, addr), "hintstream_ahead_skipped_total", "reason", "over_budget") >= 2
	}, "two prefetches not stopped by the budget")
	natstest.Eventually(t, 30*time.Second, func() bool {
		return series(scrape(t, addr), "hintstream_ahead_wasted_bytes_total", "reason", "expired") == 2*used
	}, "the silent session's prefetch not counted wasted")
	sent := 0
	for i := range 3 {
		pls, _ := aheadFor(sink.Messages(), "silent-"+strconv.Itoa(i))
		sent += len(pls)
	}
	m = scrape(t, addr)
	if wasted := series(m, "hintstream_ahead_wasted_bytes_total"); sent != 1 || wasted > 1*used+64*kvBytes {
		t.Fatalf("%d silent sessions prefetched, %v bytes wasted: want 1 within the budget", sent, wasted)
	}

	// Over budget now (a whole prompt wasted, used + warm-up allowed: no
	// room): the next regular session gets no prefetch, and that is
	// counted.
	// Stopped by the budget itself, or by the trial that holds plans back
	// while would-be prefetches waste more than the budget allows: which
	// of the two sees it first depends on when the silent sessions'
	// would-be prefetches ran out, so a loaded machine may give either.
	stopped := func() float64 {
		m := scrape(t, addr)
		return series(m, "hintstream_ahead_skipped_total", "reason", "over_budget") +
			series(m, "hintstream_ahead_skipped_total", "reason", "trial")
	}
	before := stopped()
	rhythm(t, publish, "late", 9000)
	natstest.Eventually(t, 15*time.Second, func() bool { return stopped() > before },
		"prefetch over budget not counted")
	if pls, _ := aheadFor(sink.Messages(), "late"); len(pls) != 0 {
		t.Fatalf("sent over budget: %v", pls)
	}
	if _, err := aff.PreferredWorker(ctx, "late"); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("affinity for a prefetch never sent: %v", err)
	}
	// inspect ahead reports the same accounting.
	out := inspectOut(t, addr, "ahead")
	want := fmt.Sprintf("bytes used %d, wasted %d (2.00 × used)", int(used), int(2*used))
	over := 0
	if m := regexp.MustCompile(`(\d+) over budget`).FindStringSubmatch(out); m != nil {
		over, _ = strconv.Atoi(m[1])
	}
	if !strings.Contains(out, want) || over < 2 {
		t.Fatalf("inspect ahead: %q, want %q and at least 2 over budget", out, want)
	}
	p.stop(t)
}
