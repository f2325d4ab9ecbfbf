package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// TestDemo runs what `make run` runs (the binary, an embedded JetStream
// server, the demo cluster) and checks that every wake-up reaches the
// worker the demo predicts and plain requests get nothing.
func TestDemo(t *testing.T) {
	p := start(t, "run", "--demo", "--demo-interval", "50ms", "--demo-count", "10", // 8 wake-ups, 2 plain requests

		"--embedded-port", "0", "--data-dir", t.TempDir())
	p.waitLine(t, 30*time.Second, "embedded JetStream server at nats://127.0.0.1:")

	wantRe := regexp.MustCompile(`→ wake-up (demo-[0-9a-f]+-wake-\d+) .*expect worker (\d+)`)
	gotRe := regexp.MustCompile(`← worker (\d+) got kv.prefetch for (\S+) `)
	deadline := time.Now().Add(natstest.Within(30 * time.Second))
	for {
		want, got := map[string]string{}, map[string][]string{}
		plain := 0
		for _, l := range p.lines(&p.out) {
			if m := wantRe.FindStringSubmatch(l); m != nil {
				want[m[1]] = m[2]
			}
			if m := gotRe.FindStringSubmatch(l); m != nil {
				got[m[2]] = append(got[m[2]], m[1])
			}
			if strings.Contains(l, "→ plain request") {
				plain++
			}
		}
		if len(want) == 8 && plain == 2 && len(got) == 8 {
			for id, w := range want {
				if g := got[id]; len(g) != 1 || g[0] != w {
					t.Fatalf("%s: received by workers %v, want exactly worker %s", id, g, w)
				}
			}
			for id := range got {
				if strings.Contains(id, "-turn-") {
					t.Fatalf("plain request %s got a hint", id)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("out of time: %d wake-ups announced, %d plain, %d hinted; stdout:\n%s",
				len(want), plain, len(got), strings.Join(p.lines(&p.out), "\n"))
		}
		select {
		case <-p.done:
			t.Fatal("hintstream exited early")
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.stop(t)
}

// TestLoadGenerator: the compose layout in miniature. hintstream, a worker
// demo that sends no traffic of its own, and a traffic-only demo whose
// wake-ups reach the worker demo's sockets.
func TestLoadGenerator(t *testing.T) {
	srv := natstest.Start(t)
	url := srv.ClientURL()
	hs := start(t, "run", "--nats-url", url)
	hs.waitLine(t, 30*time.Second, "hintstream running")
	workers := start(t, "demo", "--nats-url", url, "--interval", "1h")
	workers.waitLine(t, 30*time.Second, "KV events and load published")
	gen := start(t, "demo", "--nats-url", url, "--traffic-only", "--count", "5", "--interval", "20ms")
	gotRe := regexp.MustCompile(`← worker \d+ got kv.prefetch for (demo-[0-9a-f]+-wake-\d+)`)
	deadline := time.Now().Add(natstest.Within(20 * time.Second))
	for {
		got := map[string]bool{}
		for _, l := range workers.lines(&workers.out) {
			if m := gotRe.FindStringSubmatch(l); m != nil {
				got[m[1]] = true
			}
		}
		if len(got) == 4 { // 5 requests: 4 wake-ups and a plain turn
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker demo got %d hints from the load generator, want 4:\n%s", len(got),
				strings.Join(workers.lines(&workers.out), "\n"))
		}
		select {
		case <-gen.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, p := range []*proc{gen, workers, hs} {
		p.stop(t)
	}
}
