package index

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
)

// TestOverlapIntoClears checks OverlapInto gives Overlap's answer in a
// reused map, leaving nothing of the previous prompt's.
func TestOverlapIntoClears(t *testing.T) {
	ix, seq, want := overlapPrompt(t)
	out := map[kvevents.WorkerKey]int{{WorkerID: 1 << 60}: 5}
	ix.OverlapInto(seq, out)
	if len(out) != len(want) {
		t.Fatalf("OverlapInto: %d entries, want %d", len(out), len(want))
	}
	for k, v := range ix.Overlap(seq) {
		if out[k] != v {
			t.Fatalf("OverlapInto[%v] = %d, Overlap = %d", k, out[k], v)
		}
	}
	ix.OverlapInto(nil, out)
	if len(out) != 0 {
		t.Fatalf("OverlapInto(nil) left %v", out)
	}
}
