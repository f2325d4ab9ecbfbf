package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
)

// TestFaultSIGKILLRestart: the only hintstream instance is SIGKILLed while
// it works through 5,000 wake-ups, and started again. Every wake-up is
// hinted at least once (acks follow the hint out of the process, so the
// killed instance's unacked wake-ups come back); the duplicates the sink
// sees are identified by message_id and counted.
func TestFaultSIGKILLRestart(t *testing.T) {
	const total = 5000
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := workerSink(t, ctx, js, 1)
	// A long prefetch life, so a redelivered wake-up is still worth a hint;
	// a short ack wait, so the killed instance's messages come back soon.
	// The whole backlog is published first, so the instance is killed at
	// full speed with a batch of wake-ups in hand, not idle between them.
	prompt := seq(7, 64)
	pub := newPublisher(t, js)
	for i := range total {
		if err := pub.PublishRequest(ctx, wakeEvent(fmt.Sprintf("k-%d", i), prompt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	// A long prefetch life, so a redelivered wake-up is still worth a hint;
	// a short ack wait, so the killed instance's messages come back soon.
	args := []string{"run", "--nats-url", srv.ClientURL(), "--group", "fk", "--log-format", "json",
		"--requests-deliver-all", "--prefetch-ttl", "2m", "--ack-wait", "2s", "--snapshot-interval", "0"}
	first := start(t, args...)
	natstest.Eventually(t, 60*time.Second, func() bool { d, _ := sink.counts(); return d >= total/4 }, "a quarter hinted")
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-first.done
	atKill, _ := sink.counts()

	second := start(t, args...)
	second.waitLine(t, 30*time.Second, "hintstream running")
	restartMs := time.Since(killed).Milliseconds()
	natstest.Eventually(t, 60*time.Second, func() bool { d, _ := sink.counts(); return d >= total },
		"every wake-up hinted after SIGKILL and restart")
	recoverMs := time.Since(killed).Milliseconds()
	consumerSettledFor(t, ctx, js, "fk-requests", 30*time.Second)
	second.stop(t)
	distinct, dups := sink.counts()
	for i := range total {
		if sink.count(actions.PrefetchMessageID(fmt.Sprintf("k-%d", i))) == 0 {
			t.Fatalf("wake-up k-%d never hinted", i)
		}
	}
	if distinct != total {
		t.Fatalf("%d distinct message ids, want %d", distinct, total)
	}
	figure(t, "sigkill", "wakeups", total, "lost", total-distinct, "duplicates", dups,
		"hinted_before_kill", atKill, "restart_ms", restartMs, "all_hinted_after_kill_ms", recoverMs)
}
