package tooltime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLabelBounded: 100,000 distinct tool names give at most MaxTools+2
// labels: the tracked names, "" and Other.
func TestLabelBounded(t *testing.T) {
	c := DefaultConfig()
	c.MaxTools = 16
	l := New(c)
	labels := map[string]bool{}
	for i := range 100_000 {
		tool := fmt.Sprintf("tool-%d", i)
		l.Observe(tool, time.Second)
		labels[l.Label(tool)] = true
	}
	labels[l.Label("")] = true
	long := strings.Repeat("x", MaxNameLen+1)
	l.Observe(long, time.Second)
	if got := l.Label(long); got != Other {
		t.Fatalf("untracked long name labelled %q", got)
	}
	if len(labels) != c.MaxTools+2 || !labels[Other] || !labels[""] || !labels["tool-0"] || labels["tool-16"] {
		t.Fatalf("%d labels, want %d: tracked, \"\" and %q", len(labels), c.MaxTools+2, Other)
	}
}
