package e2e

import (
	"testing"
	"time"
)

// TestDemoAgent: `make run`'s demo with --agents shows an agent whose
// harness publishes tool events: the pin at tool_start, the prefetch at
// tool_end, and the outcomes (pin kept, prefetch used) at the next turn.
func TestDemoAgent(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	p := start(t, "run", "--demo", "--agents", "--demo-interval", "200ms",
		"--embedded-port", "0", "--data-dir", t.TempDir())
	for _, want := range []string{
		"agent harness (simulated) publishes tool events",
		"← Mooncake master got kv.pin for session:demo-run/demo-run:researcher",
		"← worker 2 got kv.prefetch for agent:tool_end_prefetch:",
		"✓ outcome pin tool_start_pin (demo-run/demo-run:researcher, worker 2, 192 tokens): kept",
		"✓ outcome prefetch tool_end_prefetch (demo-run/demo-run:researcher, worker 2, 192 tokens): used",
	} {
		p.waitLine(t, 30*time.Second, want)
	}
	p.stop(t)
}
