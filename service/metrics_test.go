package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// TestFreshScrapeListsEveryFamily: before any event, /metrics lists every
// typed family (the learned tool-time gauge aside: it has no series until
// a tool is learned), the sender's families (hints_dropped_total at 0
// for every reason) and hintstream_ready, each with a HELP text that says
// what it counts rather than "hintstream counter <name>".
func TestFreshScrapeListsEveryFamily(t *testing.T) {
	svc := startHTTP(t)
	resp, err := http.Get("http://" + svc.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	if strings.Contains(body, "hintstream counter") {
		t.Error("a HELP text still says \"hintstream counter\"")
	}
	want := []string{"hintstream_hints_dropped_total", "hintstream_hints_sent_total", "hintstream_ready",
		"hintstream_requests_malformed_total", "hintstream_responses_malformed_total",
		"hintstream_kv_events_malformed_total", "hintstream_load_malformed_total"}
	for _, name := range svc.Counters.Names() {
		if name != svc.Counters.ToolExpected.Name() {
			want = append(want, name)
		}
	}
	for _, name := range want {
		if !strings.Contains(body, "\n# TYPE "+name+" ") {
			t.Errorf("fresh /metrics lacks %s", name)
		}
	}
	for _, series := range []string{`hintstream_hints_dropped_total{endpoint="departed",reason="expired"} 0`,
		`hintstream_hints_prefetch_skipped_total{reason="no_worker"} 0`, "hintstream_ready 1",
		`hintstream_registry_invalid_records_total{reason="bad_port"} 0`} {
		if !strings.Contains(body, "\n"+series+"\n") {
			t.Errorf("fresh /metrics lacks %s", series)
		}
	}
}

// startHTTP starts a default instance serving /metrics on a free port;
// it is stopped when the test ends.
func startHTTP(t *testing.T) *Service {
	t.Helper()
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := New(Config{NATSURL: srv.ClientURL(), HTTPAddr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	return svc
}
