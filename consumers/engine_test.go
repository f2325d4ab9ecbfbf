package consumers

import (
	"testing"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/kvevents/index"
)

// testEngine builds the decisions a test's consumers drive. Renewals are
// off unless d sets PinRenewMax (a test may set Pins().RenewMax after).
func testEngine(t testing.TB, d engine.Decisions, deps engine.EngineDeps) *engine.Engine {
	t.Helper()
	if deps.Index == nil {
		deps.Index = index.New()
	}
	if d.PinRenewMax == 0 {
		d.NoPinRenewal = true
	}
	e, err := engine.NewEngine(d, deps)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
