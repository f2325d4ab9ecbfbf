package observe

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// fixture is a set of real sources: counters as the consumers write them,
// an index holding stored blocks, and a pool that sent one hint to a real
// PULL socket and dropped one expired hint.
type fixture struct {
	src      Sources
	endpoint string
	ready    atomic.Bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	c := metrics.New()
	for range 5 {
		c.RequestsReceived.Inc()
	}
	c.RequestsMalformed.Inc("missing request_id")
	c.RequestsMalformed.Inc("missing request_id")
	c.RequestsWakeup.Inc()
	c.RequestsPlain.Inc()
	c.HintsPrefetchSkipped.Inc("no_worker")
	c.HintsPrefetchDropped.Inc("queue_full")
	c.HintsPrefetchQueued.Inc()
	c.HintsPinDropped.Inc("expired")
	c.ResponsesReceived.Inc()
	c.ResponsesMalformed.Inc("bad json")
	c.KVEventsReceived.Inc()
	c.KVEventsApplied.Inc("stored")
	c.KVEventsApplied.Inc("stored")
	c.KVEventsApplied.Inc("removed")
	c.KVEventsMalformed.Inc("invalid event")
	c.ToolExpected.Set("search", 9)
	c.ToolExpected.Set("search", 4)
	c.ToolObserved.Inc("search")
	c.PinsExpectedFrom.Inc("learned")
	f.src.Counters = c

	ix := index.New()
	w := kvevents.WorkerKey{WorkerID: 7}
	if err := ix.Apply(kvevents.Event{Worker: w, EventID: 1, Kind: schemas.KindStored,
		Blocks: []kvevents.Block{{ExternalHash: 101, LocalHash: 1}, {ExternalHash: 102, LocalHash: 2}}}); err != nil {
		t.Fatal(err)
	}
	parent := uint64(102)
	if err := ix.Apply(kvevents.Event{Worker: w, EventID: 5, Kind: schemas.KindStored, ParentHash: &parent,
		Blocks: []kvevents.Block{{ExternalHash: 103, LocalHash: 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply(kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: 8}, EventID: 1, Kind: schemas.KindStored,
		Tier: schemas.StorageTier("host_pinned"), Blocks: []kvevents.Block{{ExternalHash: 201, LocalHash: 1}}}); err != nil {
		t.Fatal(err)
	}
	f.src.Index = ix.Stats

	pull, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pull.Close() })
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	f.endpoint, err = pull.GetLastEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			t.Errorf("pool close: %v", err)
		}
	})
	if err := pool.Send(f.endpoint, actions.Hint{MessageID: "m1", Body: []byte("hint-1"), Deadline: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := pull.SetRcvtimeo(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, err := pull.RecvBytes(0); err != nil || string(got) != "hint-1" {
		t.Fatalf("PULL got %q, %v", got, err)
	}
	if err := pool.Send(f.endpoint, actions.Hint{MessageID: "m2", Body: []byte("late"), Deadline: time.Now().Add(-time.Second)}); !errors.Is(err, actions.ErrExpired) {
		t.Fatalf("expired send: %v", err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return pool.Stats()[f.endpoint].Sent == 1 }, "pool never counted the sent hint")
	f.src.Endpoints = pool.Stats

	f.src.Pending = func() map[string]uint64 { return map[string]uint64{"requests": 7, "responses": 0} }
	f.src.Ready = f.ready.Load
	f.src.Latency = new(Histogram)
	f.src.Latency.Observe(f.endpoint, 50*time.Microsecond)
	f.src.Latency.Observe(f.endpoint, 700*time.Microsecond)
	f.src.Latency.Observe(f.endpoint, 3*time.Second)
	return f
}

func start(t *testing.T, o Options, s Sources) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	o.Logger = slog.New(slog.DiscardHandler)
	srv, err := Start(o, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv
}

// get fetches path without keep-alive, so that no client connection
// outlives the request (the leak test counts goroutines).
func get(t *testing.T, srv *Server, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + srv.Addr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

func scrape(t *testing.T, srv *Server) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, srv, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	return fams
}

// series returns the metric of family name whose labels are exactly lbls.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, lbls ...string) *dto.Metric {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		t.Fatalf("family %s missing", name)
	}
	if mf.GetType() != typ {
		t.Fatalf("%s is %v, want %v", name, mf.GetType(), typ)
	}
next:
	for _, m := range mf.Metric {
		if len(m.Label)*2 != len(lbls) {
			continue
		}
		for i, lp := range m.Label {
			if lp.GetName() != lbls[2*i] || lp.GetValue() != lbls[2*i+1] {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s%v missing; have %v", name, lbls, mf.Metric)
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, lbls ...string) float64 {
	t.Helper()
	m := series(t, fams, name, typ, lbls...)
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("value of %v", typ)
	return 0
}

func TestMetricsEndpoint(t *testing.T) {
	f := newFixture(t)
	srv := start(t, Options{}, f.src)
	fams := scrape(t, srv)
	C, G := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	ep := f.endpoint

	want := []struct {
		name string
		typ  dto.MetricType
		lbls []string
		v    float64
	}{
		{"hintstream_requests_received_total", C, nil, 5},
		{"hintstream_requests_malformed_total", C, []string{"reason", "missing request_id"}, 2},
		{"hintstream_hints_prefetch_dropped_total", C, []string{"reason", "queue_full"}, 1},
		{"hintstream_kv_events_applied_total", C, []string{"kind", "stored"}, 2},
		{"hintstream_kv_events_applied_total", C, []string{"kind", "removed"}, 1},
		{"hintstream_tooltime_expected_seconds", G, []string{"tool", "search"}, 4},
		{"hintstream_tooltime_observed_total", C, []string{"tool", "search"}, 1},
		{"hintstream_pins_expected_from_total", C, []string{"source", "learned"}, 1},
		{"hintstream_index_blocks", G, []string{"tier", "device"}, 3},
		{"hintstream_index_blocks", G, []string{"tier", "other"}, 1},
		{"hintstream_index_workers", G, nil, 2},
		{"hintstream_index_stale_workers", G, nil, 1},
		{"hintstream_index_gaps_total", C, nil, 1},
		{"hintstream_index_unknown_parent_total", C, nil, 0},
		{"hintstream_hints_sent_total", C, []string{"endpoint", ep}, 1},
		{"hintstream_hints_retried_total", C, []string{"endpoint", ep}, 0},
		{"hintstream_hints_released_early_total", C, []string{"endpoint", ep}, 0},
		{"hintstream_hints_dropped_total", C, []string{"endpoint", ep, "reason", "expired"}, 1},
		{"hintstream_sender_queue_depth", G, []string{"endpoint", ep}, 0},
		{"hintstream_consumer_pending", G, []string{"consumer", "requests"}, 7},
		{"hintstream_consumer_pending", G, []string{"consumer", "responses"}, 0},
	}
	for _, w := range want {
		if got := value(t, fams, w.name, w.typ, w.lbls...); got != w.v {
			t.Errorf("%s%v = %v, want %v", w.name, w.lbls, got, w.v)
		}
	}
	// A labelled family carries no unlabelled total beside its labels.
	for _, name := range []string{"hintstream_requests_malformed_total", "hintstream_hints_prefetch_skipped_total"} {
		for _, m := range fams[name].Metric {
			if len(m.Label) != 1 || m.Label[0].GetName() != "reason" {
				t.Errorf("%s has series %v", name, m.Label)
			}
		}
	}
	if n := len(fams["hintstream_hints_sent_total"].Metric); n != 1 {
		t.Errorf("hintstream_hints_sent_total has %d series, want the pool's one", n)
	}

	sum := series(t, fams, "hintstream_hint_send_seconds", dto.MetricType_SUMMARY, "endpoint", ep).GetSummary()
	maxSend := value(t, fams, "hintstream_hint_send_max_seconds", G, "endpoint", ep)
	if sum.GetSampleCount() != 1 || sum.GetSampleSum() <= 0 || sum.GetSampleSum() > 5 || maxSend != sum.GetSampleSum() {
		t.Errorf("send summary count %d sum %v max %v", sum.GetSampleCount(), sum.GetSampleSum(), maxSend)
	}

	h := series(t, fams, "hintstream_hint_latency_seconds", dto.MetricType_HISTOGRAM, "endpoint", ep).GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() < 3 || h.GetSampleSum() > 3.001 {
		t.Errorf("latency histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	cum := map[float64]uint64{}
	for _, b := range h.Bucket {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	if cum[0.0001] != 1 || cum[0.001] != 2 || cum[2.5] != 2 || cum[5] != 3 || cum[math.Inf(1)] != 3 || len(cum) != 16 {
		t.Errorf("latency buckets %v", cum)
	}

	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("%s missing: the Go and process collectors must be registered", name)
		}
	}
}

func TestHealthReadyPprofOff(t *testing.T) {
	var ready atomic.Bool
	srv := start(t, Options{}, Sources{Ready: ready.Load})
	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "catching up" {
		t.Errorf("/readyz before ready: %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready: %d", code)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := get(t, srv, p); code != http.StatusNotFound {
			t.Errorf("%s with pprof off: %d, want 404", p, code)
		}
	}

	// Ready nil: always ready.
	srv2 := start(t, Options{}, Sources{})
	if code, _ := get(t, srv2, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz without Ready: %d", code)
	}
}

func TestPprofOn(t *testing.T) {
	srv := start(t, Options{Pprof: true}, Sources{})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if code, body := get(t, srv, p); code != http.StatusOK || body == "" {
			t.Errorf("%s with pprof on: %d", p, code)
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(Options{}, Sources{}); !errors.Is(err, ErrNoAddr) {
		t.Errorf("empty addr: %v", err)
	}
	srv := start(t, Options{}, Sources{})
	if _, err := Start(Options{Addr: srv.Addr()}, Sources{}); err == nil {
		t.Error("a second server on a used address started")
	}
	if _, err := Start(Options{Addr: "127.0.0.1:notaport"}, Sources{}); err == nil {
		t.Error("a bad address was accepted")
	}
}

// serverStacks returns the goroutine stacks that belong to a server.
func serverStacks() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	var out []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "hintstream/observe.Start") || strings.Contains(g, "net/http.(*conn).serve") ||
			strings.Contains(g, "net/http.(*Server).Serve") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func TestCloseLeaksNoGoroutine(t *testing.T) {
	if s := serverStacks(); s != "" {
		t.Fatalf("server goroutines before the test:\n%s", s)
	}
	srv, err := Start(Options{Addr: "127.0.0.1:0", Pprof: true}, Sources{Counters: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	get(t, srv, "/metrics")
	// An idle keep-alive connection must not hold Close up.
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := conn.Read(buf); err != nil {
		t.Fatal(err)
	}
	if s := serverStacks(); s == "" {
		t.Fatal("no server goroutine seen while serving: the leak check cannot work")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := srv.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return serverStacks() == "" }, "server goroutines left:\n%s", serverStacks())
	if c, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("still accepting after Close")
	}
}

func TestCollectorLint(t *testing.T) {
	f := newFixture(t)
	problems, err := testutil.CollectAndLint(newCollector(f.src))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestCollectorNilSources(t *testing.T) {
	if n := testutil.CollectAndCount(newCollector(Sources{})); n != 0 {
		t.Errorf("collected %d metrics from no sources", n)
	}
}

// Label values from input that are not valid UTF-8 must give a valid
// exposition, and a labelled family carries no unlabelled total.
func TestCollectorOddLabels(t *testing.T) {
	c := metrics.New()
	c.RequestsMalformed.Inc("\xff\xfe")
	c.RequestsMalformed.Inc("")
	c.ToolObserved.Inc("search")
	c.ToolExpected.Set("search", 1.5)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(Sources{Counters: c}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, mf := range fams {
		got[mf.GetName()] = mf
	}
	bad := 0.0
	for _, m := range got["hintstream_requests_malformed_total"].GetMetric() {
		if len(m.Label) != 1 {
			t.Errorf("malformed family series %v", m.Label)
		}
		if m.Label[0].GetValue() == "\uFFFD" {
			bad = m.GetCounter().GetValue()
		}
	}
	if bad != 1 {
		t.Errorf("invalid UTF-8 label counted %v under U+FFFD", bad)
	}
	if v := got["hintstream_tooltime_expected_seconds"].GetMetric()[0].GetGauge().GetValue(); v != 1.5 {
		t.Errorf("tool time = %v, want 1.5", v)
	}
}

// hintstream_ready follows Sources.Ready, as /readyz does.
func TestReadyGauge(t *testing.T) {
	var ready atomic.Bool
	c := newCollector(Sources{Ready: ready.Load})
	if v := testutil.ToFloat64(c); v != 0 {
		t.Errorf("hintstream_ready = %v before ready", v)
	}
	ready.Store(true)
	if v := testutil.ToFloat64(c); v != 1 {
		t.Errorf("hintstream_ready = %v once ready", v)
	}
}
