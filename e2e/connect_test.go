package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/natstest"
)

// TestRunWaitsForNATS: `run` started before its NATS server (as compose
// or Kubernetes may do) retries the first connection, logging each
// attempt; a server started on that port after the second retry is
// joined, and the run becomes ready and hints.
func TestRunWaitsForNATS(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	p := start(t, "run", "--nats-url", url, "--group", "cw", "--log-format", "json", "--snapshot-interval", "0")
	retry := p.waitLine(t, 30*time.Second, `"attempt":2`)
	for _, want := range []string{`"msg":"nats not reachable, retrying"`, `"err":"natsconn: connect to ` + url, `"retry_in":"`} {
		if !strings.Contains(retry, want) {
			t.Fatalf("retry line lacks %s:\n%s", want, retry)
		}
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	p.waitLine(t, 60*time.Second, `"msg":"nats connected"`)
	p.waitLine(t, 60*time.Second, "hintstream running")

	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	_, js := natstest.Connect(t, srv)
	sink := workerSink(t, ctx, js, 1)
	p.waitLine(t, 30*time.Second, "worker joined")
	publishRequest(t, ctx, js, *wakeEvent("late-nats-1", seq(11, 64)))
	natstest.Eventually(t, 30*time.Second, func() bool { return sink.has("late-nats-1") }, "hint for the wake-up")
	p.stop(t)
}

// TestRunConnectTimeout: with no server at all, `run` gives up after
// --connect-timeout and exits 1 with an error that says so.
func TestRunConnectTimeout(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	begun := time.Now()
	p := start(t, "run", "--nats-url", url, "--connect-timeout", "2s", "--snapshot-interval", "0")
	select {
	case <-p.done:
	case <-time.After(natstest.Within(60 * time.Second)):
		t.Fatal("run still waiting long after a 2s --connect-timeout")
	}
	took := time.Since(begun)
	errs := strings.Join(p.lines(&p.errs), "\n")
	if code := p.cmd.ProcessState.ExitCode(); code != 1 || took < 2*time.Second {
		t.Fatalf("exit %d after %v (want 1 after at least 2s)\n%s", code, took, errs)
	}
	if !strings.Contains(errs, "NATS not reachable within the connect timeout (2s,") || !strings.Contains(errs, "no servers available") {
		t.Fatalf("the error does not say it gave up on NATS:\n%s", errs)
	}
}

// TestSnapshotIntervalZeroIsOff: with `--snapshot-interval 0` a run
// never touches the snapshot store, not at start-up nor at shutdown (the
// README's "0: off"); with the default it opens (creates) it.
func TestSnapshotIntervalZeroIsOff(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	for _, tc := range []struct {
		bucket string
		flags  []string
		saved  bool
	}{
		{"snap_off", []string{"--snapshot-interval", "0"}, false},
		{"snap_default", nil, true},
	} {
		p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--group", tc.bucket, "--snapshot-bucket", tc.bucket}, tc.flags...)...)
		p.waitLine(t, 30*time.Second, "hintstream running")
		p.stop(t)
		_, err := js.ObjectStore(ctx, tc.bucket)
		if saved := err == nil; saved != tc.saved {
			t.Errorf("%q: snapshot bucket present %v (%v), want %v", tc.flags, saved, err, tc.saved)
		}
	}
}
