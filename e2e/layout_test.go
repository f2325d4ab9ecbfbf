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
	pkgs := []string{"../decide/engine", "../decide/pins", "../replay", "../actions", "../kvevents", "../kvevents/index", "../decide/routing"}
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

// layers orders the module's packages from the bottom (0) up, as
// docs/adr/0011-a-tree-that-reads-by-layer.md draws them. A package may
// import its own layer and those below, never one above. A path names a
// package and everything under it; the longest match wins, and a path
// ending in "/" names only what is under it.
var layers = []struct {
	name string
	pkgs []string
}{
	{"wire", []string{"schemas", "streams", "internal/"}},
	{"formats", []string{"actions", "kvevents", "ingest/eventplane", "ingest/agentevents", "ingest/requesttrace", "decide/tooltime", "state/registry", "state/snapshots", "service/natsconn", "client"}},
	{"metrics", []string{"observe/metrics"}},
	{"decision parts", []string{"kvevents/index", "decide/routing", "decide/pins", "emit/receiver"}},
	{"engine", []string{"decide/engine", "decide/agents"}},
	{"transports", []string{"consumers", "ingest/bridge", "actions/zmqsend", "emit/adapter", "emit/lmcachepin"}},
	{"instance", []string{"service", "observe", "internal/demo"}},
	{"tools", []string{"cmd/", "whatif", "replay", "loadtest", "examples/", "e2e"}},
}

// layerOf is p's layer (module-relative path), or -1.
func layerOf(p string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, q := range l.pkgs {
			match := p == q || strings.HasPrefix(p, q+"/")
			if strings.HasSuffix(q, "/") {
				match = strings.HasPrefix(p, q)
			}
			if match && len(q) > bestLen {
				best, bestLen = i, len(q)
			}
		}
	}
	return best
}

// Every package has a layer and imports nothing above it.
func TestImportsGoDownTheLayers(t *testing.T) {
	const m = "github.com/hintstream/hintstream/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 40 {
		t.Fatalf("go list listed %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		from := strings.TrimPrefix(f[0], m)
		lf := layerOf(from)
		if lf < 0 {
			t.Errorf("%s has no layer: add it to layers and to ADR 0011", from)
			continue
		}
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, m) {
				continue
			}
			to := strings.TrimPrefix(imp, m)
			if lt := layerOf(to); lt > lf {
				t.Errorf("%s (%s) imports %s (%s): an upward import", from, layers[lf].name, to, layers[lt].name)
			}
		}
	}
	// The rule can fail: the engine sits above the routing it calls.
	if layerOf("decide/engine") <= layerOf("decide/routing") || layerOf("kvevents/index") <= layerOf("kvevents") {
		t.Fatal("layers: the engine must sit above routing, the index above kvevents")
	}
}
