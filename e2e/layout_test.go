package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDecisionsLinkNoZeroMQ: the decisions, the pins, replay and the
// envelopes build without libzmq, so they run (and are tested) where no
// ZeroMQ is installed; only the senders (actions/zmqsend) and what wires
// them link it.
func TestDecisionsLinkNoZeroMQ(t *testing.T) {
	pkgs := []string{"../engine", "../pins", "../replay", "../actions", "../kvevents", "../kvevents/index", "../routing", "../retention", "../ahead"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(pkgs) {
		t.Fatalf("go list -deps listed %d packages for %d asked", len(deps), len(pkgs))
	}
	for _, d := range deps {
		if strings.Contains(d, "pebbe/zmq4") {
			t.Fatalf("%v depend on %s", pkgs, d)
		}
	}
	// The check itself can fail: the sender package does link it.
	out, err = exec.Command("go", "list", "-deps", "../actions/zmqsend").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "github.com/pebbe/zmq4") {
		t.Fatalf("actions/zmqsend should link pebbe/zmq4: %v\n%s", err, out)
	}
}

// The shipped binary links no test harness: not the load tests (which
// import the simulator, never the other way round) and not the test
// vectors' finder. The check can fail: the load-test command does link
// loadtest/ packages.
func TestBinaryLinksNoTestHarness(t *testing.T) {
	harness := func(d string) bool {
		const m = "github.com/hintstream/hintstream/"
		return strings.HasPrefix(d, m+"loadtest") || d == m+"internal/testvectors"
	}
	out, err := exec.Command("go", "list", "-deps", "../cmd/hintstream").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps ../cmd/hintstream listed only %d packages", len(deps))
	}
	for _, d := range deps {
		if harness(d) {
			t.Fatalf("cmd/hintstream depends on %s", d)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "../loadtest/cmd/loadtest").CombinedOutput()
	if err != nil || !harness("github.com/hintstream/hintstream/loadtest/value") || !strings.Contains(string(out), "github.com/hintstream/hintstream/loadtest/value") {
		t.Fatalf("loadtest/cmd/loadtest should link loadtest/value: %v\n%s", err, out)
	}
}
