package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// refusedBy waits for the server's permission refusal naming subject on
// errs (a user's async errors).
func refusedBy(t *testing.T, errs <-chan error, what, subject string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-errs:
			if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), `"`+subject+`"`) {
				return
			}
		case <-deadline:
			t.Fatalf("%s: the server did not refuse %s", what, subject)
		}
	}
}

// TestShippedNATSConfigIsGenerated: deploy/nats/nats-server.conf is
// what `hintstream nats-config` prints, so the shipped file and the
// generator cannot drift apart.
func TestShippedNATSConfigIsGenerated(t *testing.T) {
	out, err := exec.Command(binary, "nats-config").Output()
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile("../deploy/nats/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(shipped) {
		t.Fatal("deploy/nats/nats-server.conf differs from `hintstream nats-config`: regenerate it")
	}
}

// TestLeastPrivilegeHolds runs hintstream under the configuration
// `hintstream nats-config --workers 1,2` generates, against a real
// nats-server, and tries what a curious frontend or a hostile worker
// tried before: reading others' replies, wiping or expiring the
// registry, speaking for another worker by subject or by body, claiming
// another worker's endpoint and registering a layout that would make
// every pin huge. The server or hintstream refuses each, hintstream
// counts what it refuses, and hintstream itself meets no refusal.
func TestLeastPrivilegeHolds(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if out, err := exec.Command(binary, "nats-config", "--workers", "1,2", "--out", conf).CombinedOutput(); err != nil {
		t.Fatalf("nats-config: %v\n%s", err, out)
	}
	s := privilegeServerFrom(t, conf, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	p := startEnv(t, []string{"HINTSTREAM_NATS_USER=hintstream"}, "run", "--nats-url", s.ClientURL(),
		"--log-format", "json", "--http-addr", "127.0.0.1:0", "--snapshot-interval", "0")
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")

	e1, e2, ef := make(chan error, 64), make(chan error, 64), make(chan error, 64)
	w1, _ := userConn(t, s, "worker_1", e1)
	w2, w2js := userConn(t, s, "worker_2", e2)
	fnc, _ := userConn(t, s, "frontend", ef)

	// Records go through hintstream; each worker only for itself.
	sink1, sink2 := newFaultSink(t, 0), newFaultSink(t, 0)
	one := schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16, HintEndpoints: []string{sink1.ep}}
	if err := registry.Ask(ctx, w1, "", 1, &one, time.Minute); err != nil {
		t.Fatalf("worker 1 registers: %v", err)
	}
	p.waitLine(t, 10*time.Second, "worker joined")
	refusedReason := func(what string, err error, reason string) {
		t.Helper()
		if !errors.Is(err, registry.ErrRefused) || !strings.Contains(err.Error(), "("+reason+")") {
			t.Errorf("%s: %v, want a refusal (%s)", what, err, reason)
		}
	}
	forOne := one
	refusedReason("worker 2 sends worker 1's record on its own subject", registry.Ask(ctx, w2, "", 2, &forOne, time.Minute), registry.ReasonIDMismatch)
	thief := schemas.WorkerRecord{WorkerID: 2, Model: model, KvBlockSize: 16, HintEndpoints: []string{sink1.ep}}
	refusedReason("worker 2 claims worker 1's endpoint", registry.Ask(ctx, w2, "", 2, &thief, time.Minute), registry.ReasonEndpointClaimed)
	suffixes := make([]string, 20000)
	for i := range suffixes {
		suffixes[i] = fmt.Sprintf("_%d", i)
	}
	huge := schemas.WorkerRecord{WorkerID: 2, Model: model, KvBlockSize: 16, HintEndpoints: []string{sink2.ep},
		ObjectLayout: &schemas.ObjectLayout{PageSize: 1, HicacheObjectLayout: schemas.HicacheObjectLayout{
			KeyPrefix: "p", Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: suffixes}}}}}
	refusedReason("worker 2 registers a 20,000-suffix layout", registry.Ask(ctx, w2, "", 2, &huge, time.Minute), schemas.ReasonLayoutSuffixes)
	two := schemas.WorkerRecord{WorkerID: 2, Model: model, KvBlockSize: 16, HintEndpoints: []string{sink2.ep}}
	if err := registry.Ask(ctx, w2, "", 2, &two, time.Minute); err != nil {
		t.Fatalf("worker 2 registers itself: %v", err)
	}

	// What the server refuses.
	for _, c := range []struct {
		what, subject string
		hdr           nats.Header
	}{
		{"roll-up wiping the registry", "$KV." + registry.DefaultBucket + ".2", nats.Header{"Nats-Rollup": {"all"}}},
		{"purge of another worker's record", "$KV." + registry.DefaultBucket + ".1", nats.Header{"KV-Operation": {"PURGE"}, "Nats-Rollup": {"sub"}}},
		{"a TTL on another worker's record", "$KV." + registry.DefaultBucket + ".1", nats.Header{"Nats-TTL": {"1s"}}},
		{"KV events for worker 1", streams.KVEventSubject(1), nil},
		{"load for worker 1", streams.LoadSubject(1), nil},
		{"registering worker 1", registry.DefaultRegisterPrefix + ".1", nil},
	} {
		if err := w2.PublishMsg(&nats.Msg{Subject: c.subject, Header: c.hdr, Data: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		_ = w2.Flush()
		refusedBy(t, e2, "worker 2: "+c.what, c.subject)
	}
	for _, c := range []struct {
		who     string
		nc      *nats.Conn
		errs    chan error
		subject string
	}{
		{"frontend", fnc, ef, "_INBOX.>"},
		{"frontend", fnc, ef, "_INBOX_hintstream.>"},
		{"worker 2", w2, e2, "_INBOX_worker.1.>"},
		{"worker 2", w2, e2, registry.DefaultRegisterPrefix + ".*"},
	} {
		if _, err := c.nc.SubscribeSync(c.subject); err != nil {
			t.Fatal(err)
		}
		_ = c.nc.Flush()
		refusedBy(t, c.errs, c.who+" reads others' replies", c.subject)
	}
	if _, ok := workersOf(t, addr)[1]; !ok {
		t.Fatal("worker 1 left the registry after worker 2's attempts")
	}

	// What hintstream refuses: a body naming another worker than the subject.
	clear1, _ := json.Marshal(schemas.RouterEvent{WorkerID: 1, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindCleared}}})
	if _, err := w2js.Publish(ctx, streams.KVEventSubject(2), clear1); err != nil {
		t.Fatalf("worker 2 publishes on its own KV subject: %v", err)
	}
	if _, err := w2js.Publish(ctx, streams.LoadSubject(2), []byte(`{"worker_id":1,"active_decode_blocks":50000}`)); err != nil {
		t.Fatalf("worker 2 publishes on its own load subject: %v", err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		m := scrape(t, addr)
		return series(m, "hintstream_kv_events_malformed_total", "reason", "worker_id disagrees with subject") == 1 &&
			series(m, "hintstream_load_malformed_total", "reason", "worker_id disagrees with subject") == 1
	}, "the KV event and load report for worker 1 on worker 2's subjects refused and counted")
	m := scrape(t, addr)
	for _, reason := range []string{registry.ReasonIDMismatch, registry.ReasonEndpointClaimed, schemas.ReasonLayoutSuffixes} {
		if got := series(m, "hintstream_registry_invalid_records_total", "reason", reason); got < 1 {
			t.Errorf("registry_invalid_records_total{reason=%q} = %v, want the refusal counted", reason, got)
		}
	}
	p.stop(t)
	for _, l := range p.lines(&p.errs) {
		if strings.Contains(strings.ToLower(l), "permission") {
			t.Errorf("hintstream met a refusal under the generated config: %s", l)
		}
	}
}

// workersOf reads /inspect/workers of a running instance: worker id →
// present.
func workersOf(t *testing.T, addr string) map[uint64]bool {
	t.Helper()
	out, errs, ok := inspect(t, "--addr", addr, "workers", "--json")
	if !ok {
		t.Fatalf("inspect workers: %s", errs)
	}
	var ws struct {
		Workers []struct {
			WorkerID uint64 `json:"worker_id"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatalf("inspect workers --json: %v in %s", err, out)
	}
	got := map[uint64]bool{}
	for _, w := range ws.Workers {
		got[w.WorkerID] = true
	}
	return got
}
