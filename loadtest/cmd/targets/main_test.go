package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// The agentic-coding shape matches the published statistics it is built
// from: about 85% of turns end in a tool call, the median prompt is near
// 110K tokens, and every conversation shares the 15K-token prefix.
func TestAgenticShapeMatchesTheStatistics(t *testing.T) {
	w, err := agenticShape(1, 40)
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if share := float64(st.ToolCalls) / float64(st.Requests); share < 0.8 || share > 0.9 {
		t.Errorf("tool-call share %.3f, want about 0.85", share)
	}
	inputs := make([]int, w.Len())
	for i := range w.Len() {
		inputs[i] = w.Req(i).InputLength
		if w.Req(i).HashIDs[0] != 0 || w.Req(i).HashIDs[29] != 29 {
			t.Fatalf("request %d does not start with the shared prefix: %v", i, w.Req(i).HashIDs[:30])
		}
	}
	slices.Sort(inputs)
	if med := inputs[len(inputs)/2]; med < 80_000 || med > 140_000 {
		t.Errorf("median prompt %d tokens, want near 110K", med)
	}
	if st.Sessions != 40 {
		t.Errorf("%d conversations, want 40", st.Sessions)
	}
}

// The table: both L3 sizes, both bounds and the target line, on the
// sessions, whose figures RESULTS.md quotes.
func TestTargetsTable(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--agentic-sessions", "0", "--many-sessions", "0", "--agent-conversations", "0",
		"--policies", "today's + affinity,tool-call TTL (60 s)"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### synthetic sessions, L3 6144 pages", "### synthetic sessions, L3 768 pages",
		"| today's + affinity | 116992 | 98.7% | 100.0% |",
		"| hint-reachable bound | 116992 | 98.7% | 100% |",
		"| ditto, keeping L3 pages alone | 0 | 0.0% | 0.0% |",
		"TARGET | synthetic sessions, L3 768 pages | best today's + affinity | 98.7% of clairvoyant | 100.0% of reachable | vs best peer –",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	err = run(context.Background(), []string{"--policies", "today's,nope", "--agentic-sessions", "0", "--many-sessions", "0", "--agent-conversations", "0"}, &out)
	if err == nil || !strings.Contains(err.Error(), `--policies: no row "nope"`) {
		t.Errorf("an unknown row: %v", err)
	}
}
