package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
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
	deadline := time.Now().Add(30 * time.Second)
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
			t.Fatalf("after 30s: %d wake-ups announced, %d plain, %d hinted; stdout:\n%s",
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
