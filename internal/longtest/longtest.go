// Package longtest marks the tests that are long by nature (a flood of
// 65,536 ranks, a tool built from source): they run in `make test-long`,
// which sets HINTSTREAM_TEST_LONG=1, and are skipped, saying so, by
// `make test`.
package longtest

import (
	"os"
	"testing"
)

// Env is the variable that turns the long tests on.
const Env = "HINTSTREAM_TEST_LONG"

// On says whether the long tests run.
func On() bool { return os.Getenv(Env) == "1" }

// Require skips tb unless the long tests run; why says what makes it long.
func Require(tb testing.TB, why string) {
	tb.Helper()
	if !On() {
		tb.Skipf("long by nature (%s): runs in make test-long (%s=1)", why, Env)
	}
}
