package whatif

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hintstream/hintstream/whatif/workload"
)

// TestWriteSessionsJSON writes the --json report of the whole table on
// the synthetic agentic sessions (workload.Generate, seed 1: 50 sessions
// at 64 device blocks, as loadtest/cmd/peertable plays them, and 1,000
// at the default cluster) to $HINTSTREAM_WHATIF_JSON_OUT/sessions-*.json.
// scripts/whatif-same-json.sh runs it at two commits and compares the
// files (timing fields aside): a change meant to make whatif faster
// must leave them byte for byte the same. Skipped without the variable.
func TestWriteSessionsJSON(t *testing.T) {
	dir := os.Getenv("HINTSTREAM_WHATIF_JSON_OUT")
	if dir == "" {
		t.Skip("HINTSTREAM_WHATIF_JSON_OUT not set")
	}
	for _, c := range []struct {
		name     string
		sessions int
		device   int
	}{{"sessions-50-device64", 50, 64}, {"sessions-1000", 1000, 0}} {
		w, err := workload.Generate(workload.SyntheticConfig{Seed: 1, Sessions: c.sessions})
		if err != nil {
			t.Fatal(err)
		}
		cl := DefaultCluster()
		if c.device > 0 {
			cl.DeviceBlocks = c.device
		}
		rep, err := Run(context.Background(), Source{Name: c.name, Workload: w}, Options{Cluster: cl, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, c.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
