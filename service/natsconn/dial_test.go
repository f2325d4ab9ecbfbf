package natsconn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// records is a slog handler that keeps every record, for assertions.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
	seen chan struct{} // gets a value per record (non-blocking)
}

func newRecords() *records { return &records{seen: make(chan struct{}, 64)} }

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
	return nil
}

// retries returns the attrs of every "retrying" record, as strings.
func (r *records) retries() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.recs {
		if !strings.Contains(rec.Message, "retrying") {
			continue
		}
		m := map[string]string{}
		rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		out = append(out, m)
	}
	return out
}

// TestDialWaitsForServer: with no server on the port, Dial retries, logging
// each attempt's number, error and next pause; a server started on that
// port after the second failed attempt is then reached.
func TestDialWaitsForServer(t *testing.T) {
	port := natstest.FreePort(t)
	recs := newRecords()
	c := natsconn.Config{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), ConnectTimeout: 30 * time.Second, Logger: slog.New(recs)}
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := natsconn.Dial(context.Background(), c, nats.Timeout(2*time.Second))
		done <- result{nc, err}
	}()
	deadline := time.After(20 * time.Second)
	for len(recs.retries()) < 2 {
		select {
		case <-recs.seen:
		case r := <-done:
			t.Fatalf("Dial returned before the server was up: %v", r.err)
		case <-deadline:
			t.Fatal("fewer than 2 retries logged within 20s")
		}
	}
	startServer(t, func(o *server.Options) { o.Port = port })
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Dial did not connect within 20s of the server starting")
	}
	if r.err != nil {
		t.Fatalf("Dial: %v", r.err)
	}
	defer r.nc.Close()
	jsRoundTrip(t, r.nc)
	for i, m := range recs.retries()[:2] {
		if m["attempt"] != fmt.Sprint(i+1) || m["err"] == "" || m["retry_in"] == "" || strings.Contains(m["retry_in"], "000000") {
			t.Errorf("retry record %d: %v (want attempt %d, err, retry_in as a duration string)", i, m, i+1)
		}
	}
}

// TestDialGivesUp: with no server, Dial fails after ConnectTimeout with
// ErrConnectTimeout wrapping the last attempt's error; with 0 it fails
// after one attempt, as Connect; a cancelled context stops it early.
func TestDialGivesUp(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePort(t))
	quiet := slog.New(slog.DiscardHandler)
	start := time.Now()
	_, err := natsconn.Dial(context.Background(), natsconn.Config{URL: url, ConnectTimeout: time.Second, Logger: quiet}, fastFail...)
	took := time.Since(start)
	if !errors.Is(err, natsconn.ErrConnectTimeout) || !errors.Is(err, nats.ErrNoServers) || took < time.Second || took > 15*time.Second {
		t.Fatalf("after %v: %v (want ErrConnectTimeout wrapping nats.ErrNoServers after about 1s)", took, err)
	}
	if !strings.Contains(err.Error(), "attempts") {
		t.Errorf("error does not say how often it tried: %v", err)
	}
	recs := newRecords()
	_, err = natsconn.Dial(context.Background(), natsconn.Config{URL: url, Logger: slog.New(recs)}, fastFail...)
	if errors.Is(err, natsconn.ErrConnectTimeout) || !errors.Is(err, nats.ErrNoServers) || len(recs.retries()) != 0 {
		t.Fatalf("timeout 0: %v, %d retries (want one attempt)", err, len(recs.retries()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err = natsconn.Dial(ctx, natsconn.Config{URL: url, ConnectTimeout: time.Hour, Logger: quiet}, fastFail...); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := (natsconn.Config{ConnectTimeout: -time.Second}).Validate(); !errors.Is(err, natsconn.ErrConfig) {
		t.Fatalf("negative timeout: %v", err)
	}
}

// TestDialDoesNotRetryRefusals: a refused authorization fails at once,
// however long the connect timeout.
func TestDialDoesNotRetryRefusals(t *testing.T) {
	url := startServer(t, func(o *server.Options) { o.Authorization = "s3cret-token" })
	start := time.Now()
	_, err := natsconn.Dial(context.Background(), natsconn.Config{URL: url, Token: "wrong", ConnectTimeout: time.Minute,
		Logger: slog.New(slog.DiscardHandler)}, fastFail...)
	if !errors.Is(err, nats.ErrAuthorization) || time.Since(start) > 10*time.Second {
		t.Fatalf("after %v: %v (want nats.ErrAuthorization at once)", time.Since(start), err)
	}
}
