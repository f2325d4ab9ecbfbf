package index

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// loadRouterEvents decodes and adapts every line of
// dynamo_router_events.jsonl (as kvevents' own test does).
func loadRouterEvents(t testing.TB) []kvevents.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testvectors.Dir(t), "dynamo_router_events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []kvevents.Event
	for line := range bytes.Lines(b) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		re, err := schemas.Limits{}.DecodeRouterEvent(line)
		if err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		out = append(out, kvevents.FromRouterEvent(re))
	}
	if len(out) != 4 {
		t.Fatalf("got %d router events, want 4", len(out))
	}
	return out
}

func ascending(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}
