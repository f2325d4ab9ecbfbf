package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/state/registry"
)

// TestRegisterSidecarKilled: `hintstream register` keeps worker 5 in
// hintstream's choice (a wake-up reaches its sink); SIGKILLed, it stops
// refreshing, and hintstream drops the worker (and closes its sender)
// within three intervals of the kill, with nobody deleting the record.
func TestRegisterSidecarKilled(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	sink := newFaultSink(t, 0)
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	run.waitLine(t, 30*time.Second, "hintstream running")

	const interval = time.Second
	reg := start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "5", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", sink.ep, "--interval", interval.String(), "--log-format", "json")
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

	pub, err := client.NewPublisher(js)
	if err != nil {
		t.Fatal(err)
	}
	ev := wake("reg-1", "s", seq(1, 40))
	if err := pub.PublishRequest(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return sink.has("reg-1") }, "prefetch to the registered worker")
	// Survives past its TTL while the sidecar refreshes it: one more
	// refresh than the TTL has intervals.
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	first, err := kv.Get(ctx, registry.Key(5))
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		e, err := kv.Get(ctx, registry.Key(5))
		return err == nil && e.Revision() >= first.Revision()+client.TTLIntervals+1
	}, "refreshed %d times", client.TTLIntervals+1)
	if left := leftAt(run, 5); !left.IsZero() {
		t.Fatal("worker 5 left while its sidecar was refreshing it")
	}

	if err := reg.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-reg.done
	// Read right after the kill; on a machine so slow that the record
	// expired already, assume the earliest the last refresh can have been.
	lastRefresh := killed.Add(-interval)
	if last, err := kv.Get(ctx, registry.Key(5)); err == nil {
		lastRefresh = last.Created()
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return !leftAt(run, 5).IsZero() }, "worker 5 left")
	// The record expires three intervals after its last refresh (the
	// stored message's own time), at most one interval before the kill;
	// the server sweeps expired messages on its own timer, which a loaded
	// machine delays: allow a second on top.
	d := leftAt(run, 5).Sub(killed)
	sinceRefresh := leftAt(run, 5).Sub(lastRefresh)
	figure(t, "register_kill_to_leave", "interval_ms", interval.Milliseconds(), "left_after_kill_ms", d.Milliseconds(),
		"left_after_last_refresh_ms", sinceRefresh.Milliseconds())
	if sinceRefresh > client.TTLIntervals*interval+time.Second || sinceRefresh < client.TTLIntervals*interval-interval {
		t.Fatalf("worker 5 left %v after its last refresh, want %v", sinceRefresh, client.TTLIntervals*interval)
	}
	ev = wake("reg-2", "s", seq(1, 40))
	if err := pub.PublishRequest(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	consumerSettledFor(t, ctx, js, "hintstream-requests", 10*time.Second)
	if sink.has("reg-2") {
		t.Fatal("a wake-up after the worker left was still sent to it")
	}
	run.stop(t)
	if c := finalCounters(t, run); c["hintstream_hints_prefetch_skipped_total|no_worker"] != 1 {
		t.Fatalf("no_worker skips = %v, want 1", c["hintstream_hints_prefetch_skipped_total|no_worker"])
	}
}

// leftAt is when hintstream logged that worker id left (zero: not yet).
func leftAt(p *proc, id uint64) time.Time {
	for _, l := range p.lines(&p.errs) {
		if !strings.Contains(l, `"worker left"`) {
			continue
		}
		var rec struct {
			Time     time.Time `json:"time"`
			WorkerID uint64    `json:"worker_id"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.WorkerID == id {
			return rec.Time
		}
	}
	return time.Time{}
}
