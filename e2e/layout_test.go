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
