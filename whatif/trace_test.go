package whatif

import (
	"os"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/whatif/workload"
)

// tracePath is the Mooncake FAST'25 synthetic trace in shared/data.
func tracePath(tb testing.TB) string {
	tb.Helper()
	p := testvectors.TracePath(tb)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("Mooncake trace: %v", err)
	}
	return p
}

// The reusable share of the synthetic trace's prompt tokens with
// unbounded caches, counted as Mooncake's Table 2 "Cache Ratio" counts
// it (leading full blocks seen before), is 65.0%: the paper rounds its
// own count to 66%, see loadtest/RESULTS.md for the difference.
func TestReusableShareOfTheSyntheticTrace(t *testing.T) {
	f, err := os.Open(tracePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := workload.ReadRecords(f, DefaultBlockSize, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := 100 * ReusableShare(tr.Records, DefaultBlockSize); got < 64.95 || got >= 65.05 || len(tr.Records) != 3993 {
		t.Fatalf("reusable share %.3f%% of %d requests, want 65.0%% ± 0.1 of 3993", got, len(tr.Records))
	}
}
