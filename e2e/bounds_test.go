package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// Issue 19: bounded under large or hostile cardinality. These run the
// real binary against a real nats-server and real ZMQ sockets.

// openFDs counts a process's open descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("no /proc/%d/fd (the test counts the binary's open files there): %v", pid, err)
	}
	return len(ents)
}

// countLines counts the log lines containing s.
func (p *proc) countLines(s string) int {
	n := 0
	for _, l := range p.lines(&p.errs) {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// sumSeries adds up every series of the metric name.
func sumSeries(m map[string]float64, name string) float64 {
	var n float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			n += v
		}
	}
	return n
}

// junkEndpoint is a loopback endpoint nobody is expected to listen on.
// Its port lies below the kernel's ephemeral range, so no port a test
// binds with ":0" (the sinks, nats-server, the HTTP listener) and no
// source port of an outgoing connection can be one of them. Inside that
// range (they were 40000+i) a sink once drew a junk worker's port, took
// that worker's retried hint and counted 101 of 100.
func junkEndpoint(i int) string { return fmt.Sprintf("tcp://127.0.0.1:%d", junkPortBase()+i) }

// junkPortBase leaves room for 4,096 junk ports below the ephemeral
// range's start (/proc/sys/net/ipv4/ip_local_port_range; Linux's default
// 32768 where it cannot be read).
func junkPortBase() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > 0 {
			low = lo
		}
	}
	return max(low-4096, 1024)
}

// putJunkWorkers registers n workers, one model each ("junk-<i>"), whose
// hint endpoints nobody serves.
func putJunkWorkers(t *testing.T, ctx context.Context, kv jetstream.KeyValue, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: uint64(1000 + i), Model: fmt.Sprintf("junk-%d", i),
			KvBlockSize: 16, HintEndpoints: []string{junkEndpoint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// wakeJunk publishes one wake-up to each of the junk models.
func wakeJunk(t *testing.T, ctx context.Context, js jetstream.JetStream, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		r := wake(fmt.Sprintf("junk-%d", i), "", seq(1, 32))
		r.Model = fmt.Sprintf("junk-%d", i)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishAsync(streams.RequestSubject(r.Model), b); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishing junk wake-ups timed out")
	}
}

// TestSocketBudgetJunkEndpointsThenRealWorker: 1,100 workers whose hint
// endpoints nobody serves each get a wake-up, then a real worker joins.
// Before the socket budget ZeroMQ refused the 1,024th socket and the real
// worker got nothing (hints dropped with reason "error", log "too many
// open files"). Now, with the default budget and with a budget of 128,
// the real worker receives every hint and the process's open files stay
// within what the budget asks for.
func TestSocketBudgetJunkEndpointsThenRealWorker(t *testing.T) {
	for _, budget := range []int{zmqsend.DefaultMaxEndpoints, 128} {
		t.Run(fmt.Sprint("max-endpoints=", budget), func(t *testing.T) {
			srv := natstest.Start(t)
			_, js := natstest.Connect(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
			defer cancel()
			kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
			if err != nil {
				t.Fatal(err)
			}
			const junk = 1100
			putJunkWorkers(t, ctx, kv, 0, junk)
			// With room for every junk endpoint, their hints live long enough
			// to hold 1,100 sockets open at once on a loaded machine; in the
			// small budget they expire soon, leaving idle senders to evict.
			ttl := "60s"
			if budget < junk {
				ttl = "2s"
			}
			p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0",
				"--snapshot-interval", "0", "--max-endpoints", fmt.Sprint(budget), "--prefetch-ttl", ttl,
				// Every junk hint holds its trigger unacked until it expires:
				// let all 1,100 be in flight at once.
				"--max-ack-pending", "2048")
			addr := httpAddr(t, p)
			p.waitLine(t, 30*time.Second, "hintstream running")
			pid := p.cmd.Process.Pid
			peak := openFDs(t, pid)

			wakeJunk(t, ctx, js, 0, junk)
			natstest.Eventually(t, 60*time.Second, func() bool {
				peak = max(peak, openFDs(t, pid))
				m := scrape(t, addr)
				handled := sumSeries(m, "hintstream_hints_prefetch_queued_total") + sumSeries(m, "hintstream_hints_prefetch_skipped_total") +
					sumSeries(m, "hintstream_hints_prefetch_dropped_total")
				if handled < junk {
					return false
				}
				if budget >= junk { // past ZeroMQ's default of 1,023 sockets
					return series(m, "hintstream_senders_open") == junk
				}
				c, err := js.Consumer(ctx, "LLM_REQUESTS", "hintstream-requests")
				if err != nil {
					return false
				}
				info, err := c.Info(ctx)
				return err == nil && info.NumPending == 0 && info.NumAckPending == 0
			}, "junk wake-ups handled")
			m := scrape(t, addr)
			if got := series(m, "hintstream_hints_prefetch_dropped_total", "reason", "error"); got != 0 {
				t.Fatalf("%v junk hints failed with an error (the socket limit?)", got)
			}
			if open := series(m, "hintstream_senders_open"); open != float64(min(budget, junk)) {
				t.Fatalf("%v senders open after %d junk endpoints, want %d", open, junk, min(budget, junk))
			}

			sink := workerSink(t, ctx, js, 1)
			p.waitLine(t, 10*time.Second, `"worker_id":1,`)
			const hints = 100
			for i := range hints {
				publishRequest(t, ctx, js, wake(fmt.Sprintf("real-%d", i), "", seq(1, 32)))
			}
			natstest.Eventually(t, 30*time.Second, func() bool {
				peak = max(peak, openFDs(t, pid))
				d, _ := sink.counts()
				if d > hints {
					t.Fatalf("the real worker's sink got %d distinct hints, %d sent to it", d, hints)
				}
				return d == hints
			}, "the real worker's %d hints", hints)

			m = scrape(t, addr)
			open, evicted := series(m, "hintstream_senders_open"), series(m, "hintstream_senders_evicted_total")
			limit := int(zmqsend.FilesFor(budget, 0))
			if open > float64(budget) || peak > limit {
				t.Fatalf("%v senders open (budget %d), peak %d open files (allowed %d)", open, budget, peak, limit)
			}
			if budget < junk && evicted == 0 {
				t.Fatalf("budget %d: the real worker got a socket without evicting an idle one?", budget)
			}
			figure(t, "socket-budget", "max_endpoints", budget, "junk_endpoints", junk, "real_hints_received", hints,
				"peak_open_files", peak, "files_allowed", limit, "senders_open", open, "evicted", evicted,
				"junk_dropped_budget", series(m, "hintstream_hints_prefetch_dropped_total", "reason", "budget"))
		})
	}
}

// TestMetricsBoundedUnderToolAndEndpointChurn: 100,000 distinct tool
// names (100 tool-call responses of 1,000 tools each, every one observed
// when its session comes back) and 1,100 workers that each join, get a
// hint and leave leave /metrics under 2,000 lines; refused registry
// records are counted by reason.
func TestMetricsBoundedUnderToolAndEndpointChurn(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	vec := sglangVector(t, "mha-tp2-page16")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(240*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	pinEP, pins := zmqtest.Pull(t, "tcp://127.0.0.1:*", 1000)
	worker := newFaultSink(t, 0)
	layout := vec.Layout
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{worker.ep}, ObjectLayout: &layout}); err != nil {
		t.Fatal(err)
	}
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0",
		"--snapshot-interval", "0", "--pin-endpoint", pinEP, "--pin-renew-max", "0", "--prefetch-ttl", "500ms")
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")

	// 100,000 tool names.
	const sessions, toolsEach = 100, 1000
	prompt, output := vec.Tokens[:40], vec.Tokens[40:]
	for s := range sessions {
		publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: fmt.Sprintf("t-%d", s), SessionID: fmt.Sprintf("s-%d", s),
			Model: model, TokenIDs: prompt})
	}
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	completed := time.Now().Add(-10 * time.Second).UnixMilli()
	for s := range sessions {
		calls := make([]schemas.ToolCall, toolsEach)
		for j := range calls {
			calls[j].Name = fmt.Sprintf("tool-%d-%d", s, j)
		}
		publishJSON(t, ctx, js, streams.ResponseSubject(model), schemas.ResponseEvent{RequestID: fmt.Sprintf("t-%d", s),
			SessionID: fmt.Sprintf("s-%d", s), Model: model, WorkerID: 1, FinishReason: "tool_calls", ToolCalls: calls,
			OutputTokenIDs: output, CompletedAtMs: completed})
	}
	natstest.Eventually(t, 60*time.Second, func() bool { return len(pins) >= sessions }, "%d pins", sessions)
	settled(t, ctx, js, "LLM_RESPONSES", "hintstream-responses")
	for s := range sessions {
		publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: fmt.Sprintf("n-%d", s), SessionID: fmt.Sprintf("s-%d", s),
			Model: model, TokenIDs: prompt, ReceivedAtMs: time.Now().UnixMilli()})
	}
	natstest.Eventually(t, 60*time.Second, func() bool {
		return sumSeries(scrape(t, addr), "hintstream_tooltime_observed_total") == sessions*toolsEach
	}, "%d tool observations", sessions*toolsEach)

	// 1,100 endpoint churns, 100 workers at a time: join, one hint, leave.
	const churns, batch = 1100, 100
	sawLabel := false
	for first := 0; first < churns; first += batch {
		joined := p.countLines("worker joined")
		putJunkWorkers(t, ctx, kv, first, batch)
		natstest.Eventually(t, 30*time.Second, func() bool { return p.countLines("worker joined") >= joined+batch },
			"batch %d joined", first)
		wakeJunk(t, ctx, js, first, batch)
		consumerSettledFor(t, ctx, js, "hintstream-requests", 30*time.Second)
		if !sawLabel { // while registered, an endpoint has its series
			body, _ := metricsText(t, addr)
			sawLabel = strings.Contains(body, fmt.Sprintf("endpoint=%q", junkEndpoint(first)))
		}
		left := p.countLines("worker left")
		for i := first; i < first+batch; i++ {
			if err := kv.Delete(ctx, registry.Key(uint64(1000+i))); err != nil {
				t.Fatal(err)
			}
		}
		natstest.Eventually(t, 30*time.Second, func() bool { return p.countLines("worker left") >= left+batch },
			"batch %d left", first)
	}

	// Records no one can serve are refused and counted by reason.
	for key, eps := range map[string]string{
		"5001": `["inproc://rank0"]`, "5002": `["tcp://127.0.0.1:99999"]`, "5003": `["tcp://0.0.0.0:1"]`,
		"5004": `["tcp://` + strings.Repeat("h", 10<<10) + `:1"]`,
	} {
		if _, err := kv.Put(ctx, key, []byte(`{"worker_id":`+key+`,"model":"m","kv_block_size":16,"hint_endpoints":`+eps+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, addr), "hintstream_registry_invalid_records_total", "reason", schemas.ReasonEndpointTooLong) == 1
	}, "refused records counted")

	body, lines := metricsText(t, addr)
	m := scrape(t, addr)
	for reason, want := range map[string]float64{schemas.ReasonInproc: 1, schemas.ReasonBadPort: 1,
		schemas.ReasonWildcardHost: 1, schemas.ReasonEndpointTooLong: 1} {
		if got := series(m, "hintstream_registry_invalid_records_total", "reason", reason); got != want {
			t.Errorf("registry_invalid_records_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if strings.Contains(body, "hhhhhhhhhhhhhhhh") {
		t.Errorf("/metrics names a refused endpoint")
	}
	for i := range churns {
		if ep := junkEndpoint(i); ep != worker.ep && ep != pinEP && strings.Contains(body, fmt.Sprintf("endpoint=%q", ep)) {
			t.Errorf("/metrics still names departed endpoint %s", ep)
			break
		}
	}
	tools := 0
	for k := range m {
		if strings.HasPrefix(k, "hintstream_tooltime_observed_total{") {
			tools++
		}
	}
	if !sawLabel {
		t.Error("a registered worker's endpoint never had a series")
	}
	if lines >= 2000 {
		t.Fatalf("/metrics has %d lines after 100,000 tool names and %d endpoint churns, want < 2,000", lines, churns)
	}
	figure(t, "metrics-bounded", "tool_names", sessions*toolsEach, "endpoint_churns", churns, "metrics_lines", lines,
		"metrics_bytes", len(body), "tool_series", tools, "rss_bytes", rssBytes(t, p.cmd.Process.Pid))
}

// metricsText returns /metrics and its number of lines.
func metricsText(t *testing.T, addr string) (string, int) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		n++
	}
	return b.String(), n
}

// TestNoJetStreamOneLine: against a nats-server started without
// JetStream, start-up fails with one line that names the server and says
// JetStream is off (it used to be five lines of "no responders available
// for request", one per stream).
func TestNoJetStreamOneLine(t *testing.T) {
	s, err := server.NewServer(&server.Options{ServerName: "plain-nats", Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "run", "--nats-url", s.ClientURL()).CombinedOutput()
	if err == nil {
		t.Fatalf("run without JetStream succeeded:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	url := strings.TrimPrefix(s.ClientURL(), "nats://")
	if len(lines) != 1 || !strings.Contains(lines[0], "JetStream is not enabled") ||
		!strings.Contains(lines[0], `"plain-nats"`) || !strings.Contains(lines[0], url) {
		t.Fatalf("want one line naming %q at %s and saying JetStream is not enabled, got:\n%s", "plain-nats", url, out)
	}
}

// TestSocketBudgetOverFileLimitFailsAtStart: a budget the process cannot
// open fails start-up at once, in one line saying what to change, rather
// than as "too many open files" on the thousandth worker.
func TestSocketBudgetOverFileLimitFailsAtStart(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("no prlimit (util-linux; make deps installs it): %v", err)
	}
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, prlimit, "--nofile=2048:2048", binary, "run", "--nats-url", srv.ClientURL(),
		"--max-endpoints", "4096")
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		// Only with CAP_SYS_RESOURCE, which lets a process raise its hard
		// limit: then there is no limit to fail on. CI machines lack it.
		t.Skipf("the process could raise its hard limit (CAP_SYS_RESOURCE?): %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := fmt.Sprintf("%d needed, RLIMIT_NOFILE is 2048 (hard limit 2048)", zmqsend.FilesFor(4096, 0))
	if len(lines) != 1 || !strings.Contains(lines[0], "--max-endpoints 4096") || !strings.Contains(lines[0], want) {
		t.Fatalf("want one line naming --max-endpoints 4096 and %q, got:\n%s", want, out)
	}
}
