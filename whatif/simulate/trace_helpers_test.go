package simulate

import (
	"math"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
)

// tracePath is the Mooncake FAST'25 synthetic trace (testdata/data).
func tracePath(tb testing.TB) string {
	tb.Helper()
	return testvectors.TracePath(tb)
}

func TestRatioOverNothingIsNaN(t *testing.T) {
	if ratio(1, 0) == ratio(1, 0) || !math.IsNaN(ratio(0, 0)) {
		t.Fatal("a ratio over nothing is NaN")
	}
}
