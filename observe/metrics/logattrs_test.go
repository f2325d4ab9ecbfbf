package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
)

// TestLogAttrs: the shutdown line names nonzero counters by their exposed
// names, labelled families by label value, and at most LogTopTools tools
// (the most observed; the rest summed as other, their expected times
// left out), however many tools were seen.
func TestLogAttrs(t *testing.T) {
	f := New()
	f.RequestsReceived.Add(3)
	f.HintsPrefetchSkipped.Inc("expired")
	const tools = 1000
	for i := range tools {
		f.ToolObserved.Inc(fmt.Sprint("tool-", i))
		f.ToolExpected.Set(fmt.Sprint("tool-", i), 1.5)
	}
	for range 5 {
		f.ToolObserved.Inc("search")
	}
	f.ToolExpected.Set("search", 0.25)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("stopped", slog.Attr{Key: "counters", Value: slog.GroupValue(f.LogAttrs()...)})
	var rec struct {
		Counters struct {
			Received int               `json:"requests_received_total"`
			Skipped  map[string]int    `json:"hints_prefetch_skipped_total"`
			Observed map[string]int    `json:"tooltime_observed_total"`
			Expected map[string]string `json:"tooltime_expected_seconds"`
		} `json:"counters"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	c := rec.Counters
	if c.Received != 3 || len(c.Skipped) != 1 || c.Skipped["expired"] != 1 {
		t.Fatalf("counters: %s", buf.String())
	}
	if len(c.Observed) != LogTopTools+1 || c.Observed["search"] != 5 || c.Observed["other"] != tools-(LogTopTools-1) {
		t.Fatalf("observed tools: %d named, search %d, other %d (want %d, 5, %d)", len(c.Observed), c.Observed["search"],
			c.Observed["other"], LogTopTools+1, tools-(LogTopTools-1))
	}
	if len(c.Expected) != LogTopTools || c.Expected["search"] != "250ms" {
		t.Fatalf("expected times: %v", c.Expected)
	}
	if buf.Len() > 4096 {
		t.Fatalf("stopped line of %d bytes for %d tools", buf.Len(), tools)
	}
}
