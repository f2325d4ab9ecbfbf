package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoPins: `make run` shows both hints. The demo's agent turns end
// in tool calls; its simulated Mooncake master prints the pin (slot,
// number of keys, TTL, priority), a renewal while the tool runs, and the
// release at the session's next turn, in that order. Short pin TTLs make
// the renewal come before the next turn, three seconds later.
func TestDemoPins(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	p := start(t, "run", "--demo", "--demo-interval", "300ms", "--demo-count", "15",
		"--pin-min-ttl", "1s", "--pin-slack", "0s", "--embedded-port", "0", "--data-dir", t.TempDir())
	p.waitLine(t, 30*time.Second, "Mooncake master (simulated) at tcp://127.0.0.1:")
	pinRe := regexp.MustCompile(`← Mooncake master got kv.pin for session:session-A \((\d+) keys, TTL (\S+), priority (\d+)`)
	p.waitLine(t, 30*time.Second, "got the release of session:session-A")
	var order []string
	for _, l := range p.lines(&p.out) {
		switch {
		case pinRe.MatchString(l):
			m := pinRe.FindStringSubmatch(l)
			if m[1] != "28" || m[2] != "3s" || m[3] != "5" {
				t.Errorf("pin line %q: want 28 keys (14 pages × 2 suffixes), TTL 3s (2s × 1.5), priority 5", l)
			}
			order = append(order, "pin")
		case strings.Contains(l, "got a renewal of session:session-A"):
			order = append(order, "renewal")
		case strings.Contains(l, "got the release of session:session-A"):
			order = append(order, "release")
		}
	}
	got := strings.Join(order, ",")
	if !strings.HasPrefix(got, "pin,renewal") || !strings.Contains(got, "renewal,release") {
		t.Fatalf("session-A's pin events %q, want a pin, renewals, then the release; stdout:\n%s",
			got, strings.Join(p.lines(&p.out), "\n"))
	}
	p.stop(t)
}
