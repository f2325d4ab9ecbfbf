package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// privilegeServer starts a nats-server from deploy/nats/nats-server.conf
// (passwords from the environment, as in production), on a free loopback
// port with its store in a temporary directory.
func privilegeServer(t *testing.T) *server.Server {
	t.Helper()
	return privilegeServerFrom(t, "../deploy/nats/nats-server.conf")
}

// privilegeServerFrom is privilegeServer with the config at path; every
// user's password (<USER>_NATS_PASSWORD, worker_1's WORKER_1_NATS_PASSWORD)
// is set in the environment.
func privilegeServerFrom(t *testing.T, path string, workers ...uint64) *server.Server {
	t.Helper()
	vars := []string{"HINTSTREAM_NATS_PASSWORD", "FRONTEND_NATS_PASSWORD", "WORKER_NATS_PASSWORD", "SYS_NATS_PASSWORD"}
	for _, id := range workers {
		vars = append(vars, "WORKER_"+registry.Key(id)+"_NATS_PASSWORD")
	}
	for _, v := range vars {
		t.Setenv(v, "pw-"+strings.ToLower(v))
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.StoreDir, opts.JetStreamMaxStore = t.TempDir(), 1<<30
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server from deploy/nats not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// userConn connects as one of the config's users, with its role's reply
// inboxes (hintstream nats-config); async errors (the server's
// permission refusals) go to errs.
func userConn(t *testing.T, s *server.Server, user string, errs chan<- error) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	inbox := "_INBOX_" + user
	if id, ok := strings.CutPrefix(user, "worker_"); ok {
		inbox = natsconn.WorkerInboxPrefix + "." + id
	}
	return userConnInbox(t, s, user, inbox, errs)
}

// userConnInbox is userConn with the reply-inbox prefix inbox.
func userConnInbox(t *testing.T, s *server.Server, user, inbox string, errs chan<- error) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, os.Getenv(strings.ToUpper(user)+"_NATS_PASSWORD")),
		nats.CustomInboxPrefix(inbox),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	return nc, js
}

// TestLeastPrivilege runs hintstream as the `hintstream` user of
// deploy/nats/nats-server.conf: it creates its streams, buckets and
// snapshot store, hints a wake-up a `frontend` published for a worker
// the `worker` user registered, pins a tool call, saves a snapshot and
// purges KV events, all without one permission refusal. The frontend's
// attempt to publish a KV event is refused by the server.
func TestLeastPrivilege(t *testing.T) {
	s := privilegeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	pinSink := pypeer.StartSink(t, 1) // the Mooncake master's pin socket
	p := startEnv(t, []string{"HINTSTREAM_NATS_USER=hintstream"}, "run", "--nats-url", s.ClientURL(),
		"--log-format", "json", "--pin-endpoint", pinSink.Endpoints()[0], "--snapshot-interval", "500ms", "--kv-events-keep", "1ms")
	p.waitLine(t, 30*time.Second, "hintstream running")

	werrs, ferrs := make(chan error, 16), make(chan error, 16)
	wnc, wjs := userConn(t, s, "worker", werrs)
	fnc, fjs := userConn(t, s, "frontend", ferrs)
	sink := newFaultSink(t, 0)
	layout := sglangVector(t, "mha-tp2-page16").Layout
	// The worker has no right on the bucket: hintstream stores its record.
	if err := registry.Ask(ctx, wnc, "", 1, &schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16, HintEndpoints: []string{sink.ep},
		ObjectLayout: &layout}, time.Minute); err != nil {
		t.Fatalf("worker registers through hintstream: %v", err)
	}
	p.waitLine(t, 10*time.Second, "worker joined")
	ev, _ := json.Marshal(schemas.RouterEvent{WorkerID: 1, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindCleared}}})
	if _, err := wjs.Publish(ctx, streams.KVEventSubject(1), ev); err != nil {
		t.Fatalf("worker publishes a KV event: %v", err)
	}
	if _, err := fjs.Publish(ctx, streams.RequestSubject(model), wakeBody(t, "lp-1", seq(1, 64))); err != nil {
		t.Fatalf("frontend publishes a wake-up: %v", err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return sink.count(actions.PrefetchMessageID("lp-1")) > 0 },
		"wake-up hinted by hintstream as its own user")
	turn, _ := json.Marshal(schemas.RequestEvent{RequestID: "lp-2", SessionID: "s", Model: model, TokenIDs: seq(1, 64)})
	resp, _ := json.Marshal(schemas.ResponseEvent{RequestID: "lp-2", SessionID: "s", Model: model, WorkerID: 1,
		FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "search"}}})
	for _, m := range []struct {
		subj string
		body []byte
	}{{streams.RequestSubject(model), turn}, {streams.ResponseSubject(model), resp}} {
		if _, err := fjs.Publish(ctx, m.subj, m.body); err != nil {
			t.Fatalf("frontend publishes on %s: %v", m.subj, err)
		}
	}
	// The pin went through the request index and the pin slots.
	pinSink.WaitFor(t, 20*time.Second, func(ms []pypeer.Received) bool { return len(pinsFor(ms, "session:s")) == 1 },
		"the tool call pinned")
	p.waitLine(t, 20*time.Second, "KV events behind the snapshots purged")

	// The frontend may not speak for a worker: the server refuses.
	if err := fnc.Publish(streams.KVEventSubject(1), ev); err != nil {
		t.Fatal(err)
	}
	_ = fnc.Flush()
	select {
	case err := <-ferrs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") || !strings.Contains(err.Error(), "kv.events.1") {
			t.Fatalf("frontend on kv.events.1: %v", err)
		}
	case <-time.After(natstest.Within(10 * time.Second)):
		t.Fatal("the server did not refuse the frontend's KV event")
	}
	p.stop(t)
	for _, l := range p.lines(&p.errs) {
		if strings.Contains(strings.ToLower(l), "permission") {
			t.Errorf("hintstream met a refusal under its least-privilege user: %s", l)
		}
	}
}

// TestMissingPermissionOneMessage: hintstream run as a user without the
// JetStream rights it needs (the `frontend` user) says so in one clear
// line naming the refused subject, does not exit (a supervisor would
// restart it into the same refusal, over and over), retries quietly, and
// stops cleanly when asked.
func TestMissingPermissionOneMessage(t *testing.T) {
	s := privilegeServer(t)
	p := startEnv(t, []string{"HINTSTREAM_NATS_USER=frontend", "HINTSTREAM_NATS_PASSWORD=" + os.Getenv("FRONTEND_NATS_PASSWORD"),
		"HINTSTREAM_NATS_INBOX_PREFIX=_INBOX_frontend"},
		"run", "--nats-url", s.ClientURL(), "--log-format", "json", "--log-level", "debug")
	p.waitLine(t, 30*time.Second, "hintstream cannot start")
	p.waitLine(t, 60*time.Second, "start-up retry: permission still missing")
	// The connection's error callback logs the refused subject on its own
	// goroutine, which may come after the start-up lines: wait for it
	// before counting.
	p.waitLine(t, 30*time.Second, "NATS permission missing")
	alive(t, p)
	var missing, cannot, other int
	for _, l := range p.lines(&p.errs) {
		switch {
		case strings.Contains(l, "NATS permission missing"):
			missing++
			if !strings.Contains(l, `Permissions Violation for Publish to \"$JS.API.`) {
				t.Errorf("the message does not name the refused subject: %s", l)
			}
		case strings.Contains(l, "hintstream cannot start"):
			cannot++
		case strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`):
			other++
			t.Logf("other warning: %s", l)
		}
	}
	if missing != 1 || cannot != 1 || other != 0 {
		t.Errorf("%d permission lines, %d start-up lines, %d other warnings; want 1, 1, 0", missing, cannot, other)
	}
	p.stop(t)
}
